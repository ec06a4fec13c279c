"""Algebra of the cooling plant: its controls (flows, fan speed, supply temperatures) and the
steady state at a given heat and wet bulb (package :mod:`core.cooling`; docs/cooling.md).

Functions take a :class:`core.cooling.model.CoolingModel` and only read its fields, so this module
needs nothing from the model's module (which uses it for the design point)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .model import CoolingModel


def _inputs(heat_w, wetbulb_c, dt_s):
    """Heat (W), wet bulb (°C) and piece lengths (s) as float64 arrays of the heat's length
    (scalars broadcast)."""
    heat = np.asarray(heat_w, dtype="float64").ravel()
    n = len(heat)

    def arr(x):
        return np.broadcast_to(np.asarray(x, dtype="float64"), (n,)) if np.ndim(x) == 0 else \
            np.asarray(x, dtype="float64").ravel()

    return heat, arr(wetbulb_c), arr(dt_s)


def _supplies(m: CoolingModel, q: np.ndarray, wb: np.ndarray):
    """Tower fan speed and the supply temperatures (tower, primary, secondary) at load fraction q."""
    target = m.primary_supply_c - m.plant_hx_approach_c * q
    den = target - wb
    with np.errstate(divide="ignore", invalid="ignore"):
        s_req = np.where(den > 0, m.tower_approach_c * q / np.where(den > 0, den, 1.0), np.inf)
    s = np.clip(s_req, m.tower_fan_min_speed, 1.0)
    t_ts = np.maximum(target, wb + m.tower_approach_c * q / s)
    t_ps = t_ts + m.plant_hx_approach_c * q
    t_ss = np.maximum(m.secondary_supply_c, t_ps + m.cdu_approach_c * q)
    return s, t_ts, t_ps, t_ss


def _hot_end_approaches(m: CoolingModel) -> tuple[float, float]:
    """Design hot-end approaches of the CDU and plant heat exchangers (K):
    ``T_sr,d − T_pr,d`` and ``T_pr,d − T_tr,d`` (design flows, design heat, design wet bulb)."""
    one, wb = np.array([1.0]), np.array([m.design_wetbulb_c])
    _, t_ts, t_ps, t_ss = _supplies(m, one, wb)
    dts, dtp, dtt = m.design_delta_t_c
    return float(t_ss[0] + dts - t_ps[0] - dtp), float(t_ps[0] + dtp - t_ts[0] - dtt)


def _follow(heat, c, upstream_return, approach, supply, design_flow, min_flow):
    """Flow fraction of a loop whose flow follows the heat exchanger feeding it: the flow that
    brings its return to ``approach`` below the upstream loop's return, within [min_flow, 1]."""
    den = upstream_return - approach - supply
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(den > 1e-9, heat / (c * design_flow * np.where(den > 1e-9, den, 1.0)), np.inf)
    f = np.where(heat > 0, f, 0.0)
    return np.clip(f, min_flow, 1.0)


def _controls(m: CoolingModel, heat: np.ndarray, wb: np.ndarray) -> dict[str, np.ndarray]:
    """Flows, fan speed, supply temperatures and steady-state return temperatures per sample.

    Secondary flow: ``f_s = clip(q, f_s,min, 1)``. Primary and tower flows follow the heat
    exchanger that feeds them (the CDU valves / the plant's flow control): the flow that holds the
    loop's return ``δ·q`` below the upstream loop's return (δ = the design hot-end approach),
    i.e. ``ṁ = Q / (c_p (T_up,return − δ q − T_supply))``, clipped to ``[f_min, 1]·ṁ_d``; at
    design this is the design flow. So each exchanger's cold stream leaves colder than its hot
    stream enters (second law) at every load.
    """
    q = np.maximum(heat, 0.0) / m.design_heat_w
    c = m.cp_j_per_kg_k
    s, t_ts, t_ps, t_ss = _supplies(m, q, wb)
    d_cdu, d_hx = _hot_end_approaches(m)
    fs = np.clip(q, m.secondary_min_flow, 1.0)
    ms = m.secondary_flow_kg_s * fs
    x1 = t_ss + heat / (ms * c)
    fp = _follow(heat, c, x1, d_cdu * q, t_ps, m.primary_flow_kg_s, m.primary_min_flow)
    mp = m.primary_flow_kg_s * fp
    x2 = t_ps + heat / (mp * c)
    ft = _follow(heat, c, x2, d_hx * q, t_ts, m.tower_flow_kg_s, m.tower_min_flow)
    mt = m.tower_flow_kg_s * ft
    x3 = t_ts + heat / (mt * c)
    cdu = m.cdu_pump_w * fs ** 3
    fac = m.primary_pump_w * fp ** 3 + m.tower_pump_w * ft ** 3
    fan = m.tower_fan_w * s ** 3
    return {
        "q": q, "fs": fs, "fp": fp, "ft": ft, "s": s, "ms": ms, "mp": mp, "mt": mt,
        "t_ss": t_ss, "t_ps": t_ps, "t_ts": t_ts, "x1": x1, "x2": x2, "x3": x3,
        "cdu": cdu, "fac": fac, "fan": fan,
    }


def _pue(heat, cooling, it_equipment=None):
    """PUE = (heat + cooling) / IT equipment power (W arrays; ``it_equipment`` None: the heat, the
    plant model's own PUE); NaN where the denominator is 0."""
    heat = np.asarray(heat, dtype="float64")
    den = heat if it_equipment is None else np.asarray(it_equipment, dtype="float64")
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, (heat + cooling) / np.where(den > 0, den, 1.0), np.nan)


def steady_state(model: CoolingModel, heat_w, wetbulb_c) -> dict[str, np.ndarray]:
    """Equilibrium of the plant for constant heat ``heat_w`` (W) and wet bulb (°C), elementwise.

    Returns arrays for every name of :data:`COOLING_COLUMNS`, plus the flows (``*_flow_kg_s``)
    and the tower ``fan_speed`` (fraction of design).
    """
    heat = np.atleast_1d(np.asarray(heat_w, dtype="float64"))
    wb = np.broadcast_to(np.atleast_1d(np.asarray(wetbulb_c, dtype="float64")), heat.shape)
    k = _controls(model, heat, wb)
    cooling = k["cdu"] + k["fac"] + k["fan"]
    return {
        "pue": _pue(heat, cooling), "supply_temp_c": k["t_ss"], "return_temp_c": k["x1"],
        "primary_supply_temp_c": k["t_ps"], "primary_return_temp_c": k["x2"],
        "tower_supply_temp_c": k["t_ts"], "tower_return_temp_c": k["x3"], "cooling_power_w": cooling,
        "cdu_pump_w": k["cdu"], "facility_pump_w": k["fac"], "tower_fan_w": k["fan"],
        "heat_rejected_w": heat.copy(), "wetbulb_c": np.array(wb, dtype="float64"),
        "secondary_flow_kg_s": k["ms"], "primary_flow_kg_s": k["mp"], "tower_flow_kg_s": k["mt"],
        "fan_speed": k["s"],
    }
