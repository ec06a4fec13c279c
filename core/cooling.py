"""Reduced-order cooling plant: IT heat → coolant temperatures, pump/fan power, PUE (DESIGN.md §4).

The full description (equations, integration scheme, parameters and their sources) is in
``docs/cooling.md``; this docstring is its summary.

Plant (three water loops in series, heat flowing downstream)::

    racks ──Q──▶ secondary loop (CDU pumps) ──CDU HX──▶ primary / facility loop (facility pumps)
          ──plant HX──▶ tower loop (tower pumps) ──cooling towers (fans)──▶ outdoor air (wet bulb)

Inputs, constant over each *piece* of the run (the window cut at every change point of the IT
power and every sample start): the heat ``Q`` = IT input power including conversion losses
(``it_power_w + loss_w``: all electrical power ends up as heat in the coolant) and the outdoor
wet-bulb temperature ``T_wb``. ``q = Q / Q_d`` is the load fraction of the design heat.

Controls (feed-forward on the piece's load; at steady state they equal what a feedback
controller settles to):

* secondary flow ``ṁ_s = ṁ_s,d · clip(q, f_s,min, 1)`` (``f_min = 1``: constant-speed pumps);
  primary and tower flows follow the heat exchanger feeding them: the flow that keeps the loop's
  return ``δ·q`` below the upstream loop's return (δ = design hot-end approach), within
  ``[f_min, 1]`` of design — the design flow at design, and never against the second law;
* tower fans: speed ``s = clip(A·q / (T_ps,set − a_hx·q − T_wb), s_min, 1)`` — the slowest that
  brings the tower water to the temperature the primary setpoint needs, with the tower approach
  law ``T_ts − T_wb = A·q / s`` (A = approach at design load and full fan speed);
* supply temperatures (a bypass/mixing valve holds a setpoint when the plant could go colder):
  ``T_ts = max(T_ps,set − a_hx·q, T_wb + A·q/s)``, ``T_ps = T_ts + a_hx·q``,
  ``T_ss = max(T_ss,set, T_ps + a_cdu·q)`` (``a_*``: heat-exchanger approaches at design load,
  proportional to the heat carried). The towers never cool below the wet bulb.

Dynamics: each loop is a well-mixed thermal mass ``C_i`` (J/K) at its return temperature::

    C_s dT_sr/dt = Q                      − ṁ_s c_p (T_sr − T_ss)
    C_p dT_pr/dt = ṁ_s c_p (T_sr − T_ss)  − ṁ_p c_p (T_pr − T_ps)
    C_t dT_tr/dt = ṁ_p c_p (T_pr − T_ps)  − ṁ_t c_p (T_tr − T_ts)

with ``C_i = τ_i · ṁ_i,d · c_p`` (``τ_i`` = the loop's time constant at design flow; at flow
fraction f it is ``τ_i / f``). At steady state every loop obeys ``Q = ṁ c_p ΔT``. Within a piece
all inputs are constant, so the system is linear time-invariant there; it is integrated *exactly*
with the matrix exponential (closed form for this lower-bidiagonal matrix through divided
differences of exp), which is unconditionally stable for any piece length. Reported temperatures
are exact time-averages over each sample (of its pieces), like every other timeline column, so
results do not depend on the sample period.

Power: pumps and fans follow the affinity law, ``P = P_d · (speed)³`` (flow ∝ speed);
``cooling_power_w = cdu_pump_w + facility_pump_w + tower_fan_w`` (facility pumps = primary +
tower-loop pumps); ``facility_power_w = it + loss + cooling``; ``pue = facility / (it + loss)``.

Public names: :class:`CoolingModel`, :func:`generic_cooling`, :func:`cooling_from_table`,
:func:`cooling_model_for`, :func:`integrate`, :func:`steady_state`, :func:`wetbulb_bins`,
:func:`check_wetbulb`, :func:`apply_cooling`, :class:`FMUCoolingModel`, :data:`COOLING_COLUMNS`, :data:`CP_WATER`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import shutil
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from .errors import ConfigError
from .power import convert, peak_input_power_w, step_segments

__all__ = [
    "CP_WATER",
    "COOLING_COLUMNS",
    "CoolingModel",
    "CoolingTrace",
    "FMUCoolingModel",
    "apply_cooling",
    "check_wetbulb",
    "cooling_from_table",
    "cooling_model_for",
    "generic_cooling",
    "integrate",
    "steady_state",
    "wetbulb_bins",
    "peak_heat_w",
]

#: Specific heat of liquid water, J/(kg·K): 4.18 kJ/(kg·K) between 20 and 40 °C (IAPWS-95 via the
#: NIST Chemistry WebBook, "Thermophysical properties of fluid systems": 4.1816 at 20 °C, 4.1785 at
#: 30 °C, 4.1786 at 40 °C, 1 bar); the conventional 4186 J/(kg·K) is within 0.2 % of these.
CP_WATER = 4186.0

#: Columns appended to timeline.parquet when cooling is on (units in the names; °C, W).
COOLING_COLUMNS = (
    "pue",
    "supply_temp_c",            # secondary supply (CDU → racks)
    "return_temp_c",            # secondary return (racks → CDU)
    "primary_supply_temp_c",    # facility loop, plant → CDUs
    "primary_return_temp_c",    # facility loop, CDUs → plant
    "tower_supply_temp_c",      # tower loop, towers → plant heat exchanger (cold)
    "tower_return_temp_c",      # tower loop, plant heat exchanger → towers (hot)
    "cooling_power_w",          # cdu_pump_w + facility_pump_w + tower_fan_w
    "cdu_pump_w",
    "facility_pump_w",          # primary + tower-loop pumps
    "tower_fan_w",
    "heat_rejected_w",          # heat the towers reject to the air
    "wetbulb_c",
)

_TEMP_COLUMNS = tuple(c for c in COOLING_COLUMNS if c.endswith("_temp_c")) + ("wetbulb_c",)
_POWER_COLUMNS = ("cooling_power_w", "cdu_pump_w", "facility_pump_w", "tower_fan_w", "heat_rejected_w")


# --------------------------------------------------------------------------------------------
# parameters
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CoolingModel:
    """Parameters of the cooling plant (SI: W, kg/s, s, J/(kg·K); temperatures in °C).

    See docs/cooling.md for the meaning of each parameter, the generic defaults and their sources.
    ``fmu``: path of an FMU (FMI 2.0 co-simulation) that replaces the built-in model, with
    ``fmu_variables`` mapping twinsweep's names (``heat_w``, ``wetbulb_c`` in; any of
    :data:`COOLING_COLUMNS` out) to the FMU's variable names; see :class:`FMUCoolingModel`.
    """

    design_heat_w: float
    secondary_flow_kg_s: float
    primary_flow_kg_s: float
    tower_flow_kg_s: float
    cdu_pump_w: float
    primary_pump_w: float
    tower_pump_w: float
    tower_fan_w: float
    status: str = "assumed"
    cp_j_per_kg_k: float = CP_WATER
    design_wetbulb_c: float = 23.0
    secondary_supply_c: float = 32.0
    primary_supply_c: float = 28.5
    secondary_time_constant_s: float = 120.0
    primary_time_constant_s: float = 300.0
    tower_time_constant_s: float = 600.0
    secondary_min_flow: float = 1.0   # CDU pumps on constant differential pressure: ~constant flow
    primary_min_flow: float = 0.4     # facility flow follows the CDU valves (variable-speed pumps)
    tower_min_flow: float = 1.0       # constant-speed condenser-water pumps
    tower_fan_min_speed: float = 0.2
    cdu_approach_c: float = 2.0
    plant_hx_approach_c: float = 1.5
    tower_approach_c: float = 4.0
    fmu: str | None = None
    fmu_variables: tuple = ()  # sorted (twinsweep name, FMU variable name or tuple of names)

    def __post_init__(self):
        if self.status not in ("assumed", "published"):
            raise ConfigError(f"[cooling] status must be 'assumed' or 'published', got {self.status!r}")
        positive = ("design_heat_w", "secondary_flow_kg_s", "primary_flow_kg_s", "tower_flow_kg_s",
                    "cp_j_per_kg_k", "secondary_time_constant_s", "primary_time_constant_s",
                    "tower_time_constant_s", "tower_approach_c")
        for k in positive:
            v = getattr(self, k)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ConfigError(f"[cooling] {k} must be a finite number > 0, got {v!r}")
        for k in ("cdu_pump_w", "primary_pump_w", "tower_pump_w", "tower_fan_w", "cdu_approach_c",
                  "plant_hx_approach_c"):
            v = getattr(self, k)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise ConfigError(f"[cooling] {k} must be a finite number >= 0, got {v!r}")
        for k in ("secondary_min_flow", "primary_min_flow", "tower_min_flow", "tower_fan_min_speed"):
            v = getattr(self, k)
            if not (isinstance(v, (int, float)) and 0 < v <= 1):
                raise ConfigError(f"[cooling] {k} must be in (0, 1], got {v!r}")
        for k in ("design_wetbulb_c", "secondary_supply_c", "primary_supply_c"):
            v = getattr(self, k)
            if not (isinstance(v, (int, float)) and -60 <= v <= 100):
                raise ConfigError(f"[cooling] {k} must be a temperature in °C (-60..100), got {v!r}")
        # second law at the design point: each heat exchanger's cold outlet stays below its hot inlet
        # and its cold inlet below its hot outlet (counter-flow), and the towers can reach the setpoint
        d = self.design_point()
        if not (d["primary_supply_temp_c"] <= d["supply_temp_c"] and d["primary_return_temp_c"] <= d["return_temp_c"]):
            raise ConfigError(
                f"[cooling] CDU heat exchanger violates the second law at the design point "
                f"(secondary {d['supply_temp_c']:.1f}/{d['return_temp_c']:.1f} °C, primary "
                f"{d['primary_supply_temp_c']:.1f}/{d['primary_return_temp_c']:.1f} °C): raise "
                f"secondary_supply_c or primary_flow_kg_s")
        if not (d["tower_supply_temp_c"] <= d["primary_supply_temp_c"] and d["tower_return_temp_c"] <= d["primary_return_temp_c"]):
            raise ConfigError(
                f"[cooling] plant heat exchanger violates the second law at the design point "
                f"(primary {d['primary_supply_temp_c']:.1f}/{d['primary_return_temp_c']:.1f} °C, tower "
                f"{d['tower_supply_temp_c']:.1f}/{d['tower_return_temp_c']:.1f} °C): raise tower_flow_kg_s")

    # ---- derived quantities
    @property
    def assumed(self) -> bool:
        return self.status != "published"

    @property
    def thermal_masses_j_per_k(self) -> tuple[float, float, float]:
        """``C_i = τ_i · ṁ_i,d · c_p`` of the secondary, primary and tower loops (J/K)."""
        c = self.cp_j_per_kg_k
        return (self.secondary_time_constant_s * self.secondary_flow_kg_s * c,
                self.primary_time_constant_s * self.primary_flow_kg_s * c,
                self.tower_time_constant_s * self.tower_flow_kg_s * c)

    def time_constants_s(self, load: float = 1.0, wetbulb_c: float | None = None) -> tuple[float, float, float]:
        """Time constants of the three loops (s) at load fraction ``load``: ``τ_i / f_i`` with the
        flow fraction ``f_i`` the controls set there (at the design wet bulb unless given)."""
        wb = self.design_wetbulb_c if wetbulb_c is None else wetbulb_c
        k = _controls(self, np.asarray([float(load) * self.design_heat_w]), np.asarray([float(wb)]))
        return tuple(float(t / k[f][0]) for t, f in zip(
            (self.secondary_time_constant_s, self.primary_time_constant_s, self.tower_time_constant_s),
            ("fs", "fp", "ft")))

    @property
    def design_delta_t_c(self) -> tuple[float, float, float]:
        """Design temperature rise ``Q_d / (ṁ_d c_p)`` of the secondary, primary and tower loops (K)."""
        c = self.cp_j_per_kg_k
        return tuple(self.design_heat_w / (m * c) for m in
                     (self.secondary_flow_kg_s, self.primary_flow_kg_s, self.tower_flow_kg_s))

    def design_point(self) -> dict[str, float]:
        """Steady state at design heat and design wet bulb (°C, W; the keys of COOLING_COLUMNS)."""
        return {k: float(v[0]) for k, v in steady_state(self, [self.design_heat_w], [self.design_wetbulb_c]).items()}

    @property
    def design_pue(self) -> float:
        """PUE at design heat and design wet bulb: ``1 + (pumps + fans at design speeds) / Q_d``."""
        return self.design_point()["pue"]

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["fmu_variables"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.fmu_variables}
        d["design_pue"] = self.design_pue if self.fmu is None else None
        return d


#: Keys of a [cooling] table (every field of CoolingModel).
COOLING_KEYS = tuple(f.name for f in dataclasses.fields(CoolingModel))

#: Generic warm-water plant, per unit of design heat (all marked assumed; docs/cooling.md).
GENERIC = {
    "delta_t_c": (8.0, 8.0, 8.0),        # design ΔT of the secondary, primary, tower loops (K)
    "power_fraction": {"cdu_pump_w": 0.030, "primary_pump_w": 0.025, "tower_pump_w": 0.015,
                       "tower_fan_w": 0.030},  # of Q_d: design PUE = 1.10
}



def _inputs(heat_w, wetbulb_c, dt_s):
    """Heat (W), wet bulb (°C) and piece lengths (s) as float64 arrays of the heat's length
    (scalars broadcast)."""
    heat = np.asarray(heat_w, dtype="float64").ravel()
    n = len(heat)

    def arr(x):
        return np.broadcast_to(np.asarray(x, dtype="float64"), (n,)) if np.ndim(x) == 0 else \
            np.asarray(x, dtype="float64").ravel()

    return heat, arr(wetbulb_c), arr(dt_s)

def generic_cooling(design_heat_w: float, **overrides) -> CoolingModel:
    """The generic warm-water plant (marked assumed) sized for ``design_heat_w`` (W).

    Flows from a design ΔT of 8 K per loop (``ṁ = Q_d / (c_p ΔT)``); CDU pumps 3 %, primary pumps
    2.5 %, tower pumps 1.5 % and tower fans 3 % of the design heat, so the design PUE is 1.10; the
    primary supply setpoint is derived so that the fans run at full speed at the design wet bulb
    (``T_ps,set = T_wb,d + A + a_hx``) and the secondary setpoint 1.5 K above what the CDU can
    reach (``T_ss,set = T_ps,set + a_cdu + 1.5``), unless ``overrides`` give them. ``overrides``:
    any :class:`CoolingModel` field; a given flow or power replaces the derived one.
    """
    q = float(design_heat_w)
    if not (math.isfinite(q) and q > 0):
        raise ConfigError(f"cooling: design heat must be > 0 W, got {design_heat_w!r}")
    unknown = set(overrides) - set(COOLING_KEYS)
    if unknown:
        raise ConfigError(f"cooling: unknown key(s) {sorted(unknown)}; allowed: {', '.join(COOLING_KEYS)}")
    cp = float(overrides.get("cp_j_per_kg_k", CP_WATER))
    kw: dict[str, Any] = {"design_heat_w": q}
    for loop, dt in zip(("secondary", "primary", "tower"), GENERIC["delta_t_c"]):
        kw[f"{loop}_flow_kg_s"] = q / (cp * dt)
    for k, frac in GENERIC["power_fraction"].items():
        kw[k] = frac * q
    defaults = {f.name: f.default for f in dataclasses.fields(CoolingModel) if f.default is not dataclasses.MISSING}
    wb = float(overrides.get("design_wetbulb_c", defaults["design_wetbulb_c"]))
    app = float(overrides.get("tower_approach_c", defaults["tower_approach_c"]))
    ahx = float(overrides.get("plant_hx_approach_c", defaults["plant_hx_approach_c"]))
    acdu = float(overrides.get("cdu_approach_c", defaults["cdu_approach_c"]))
    kw["primary_supply_c"] = float(overrides.get("primary_supply_c", wb + app + ahx))
    kw["secondary_supply_c"] = kw["primary_supply_c"] + acdu + 1.5
    kw.update(overrides)
    return CoolingModel(**kw)


def cooling_from_table(table: dict, design_heat_w: float | None, where: str = "[cooling]",
                       base_dir: str | Path | None = None) -> CoolingModel:
    """A :class:`CoolingModel` from a system file's ``[cooling]`` table.

    Keys not given come from :func:`generic_cooling` sized for the table's ``design_heat_w``, else
    for ``design_heat_w`` (the system's peak IT input power). ``fmu`` is resolved against
    ``base_dir`` (the system file's folder); ``fmu_variables`` is a table of name → FMU variable
    (a string, or a list of strings: the heat is split equally over them).
    Raises ConfigError naming the bad key.
    """
    t = dict(table)
    unknown = set(t) - set(COOLING_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {', '.join(COOLING_KEYS)}")
    qd = t.pop("design_heat_w", design_heat_w)
    if qd is None or not (float(qd) > 0):
        raise ConfigError(f"{where}: design_heat_w is needed (the system has no power model to size the plant from)")
    if "fmu" in t and t["fmu"] is not None:
        p = Path(str(t["fmu"])).expanduser()
        if not p.is_absolute() and base_dir is not None:
            p = Path(base_dir) / p
        t["fmu"] = str(p)
    fv = t.pop("fmu_variables", {}) or {}
    if not isinstance(fv, dict):
        raise ConfigError(f"{where}: fmu_variables must be a table of name = \"FMU variable\"")
    bad = set(fv) - set(FMU_NAMES)
    if bad:
        raise ConfigError(f"{where}: fmu_variables has unknown name(s) {sorted(bad)}; allowed: {', '.join(FMU_NAMES)}")
    t["fmu_variables"] = tuple(sorted((k, tuple(v) if isinstance(v, list) else str(v)) for k, v in fv.items()))
    for k, v in list(t.items()):
        if k not in ("status", "fmu", "fmu_variables") and isinstance(v, bool):
            raise ConfigError(f"{where}: {k} must be a number, got {v!r}")
        if k not in ("status", "fmu", "fmu_variables"):
            try:
                t[k] = float(v)
            except (TypeError, ValueError):
                raise ConfigError(f"{where}: {k} must be a number, got {v!r}") from None
    return generic_cooling(float(qd), **t)


def peak_heat_w(system) -> float:
    """Peak IT input power of ``system`` (W): every node at full CPU and GPU utilisation, through
    the conversion losses (:func:`core.power.peak_input_power_w`). 0 when the system has no power model."""
    return peak_input_power_w(system.power, system.nodes, system.cpus_per_node, system.gpus_per_node)


def cooling_model_for(system) -> CoolingModel:
    """The system's cooling model: its ``[cooling]`` table, else the generic plant sized for its
    peak IT input power (:func:`peak_heat_w`). Raises ConfigError when neither is possible."""
    cm = getattr(system, "cooling", None)
    if cm is not None:
        return cm
    q = peak_heat_w(system)
    if q <= 0:
        raise ConfigError(
            f"system {system.name!r}: cannot size a cooling plant: it has no [cooling] table and no power "
            "model (peak IT power 0 W)")
    return generic_cooling(q)


# --------------------------------------------------------------------------------------------
# algebra: controls and steady state
# --------------------------------------------------------------------------------------------


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


def _pue(heat, cooling):
    heat = np.asarray(heat, dtype="float64")
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(heat > 0, (heat + cooling) / np.where(heat > 0, heat, 1.0), np.nan)


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


# --------------------------------------------------------------------------------------------
# exact integration
# --------------------------------------------------------------------------------------------


_SORT_NET = {2: ((0, 1),), 3: ((0, 1), (1, 2), (0, 1)), 4: ((0, 1), (2, 3), (0, 2), (1, 3), (1, 2))}


def _exp_dd(x) -> np.ndarray:
    """Divided difference ``exp[x_1, …, x_n]`` of exp, elementwise over ``n ≤ 4`` equal-length
    1-D arrays ``x`` (a list of the points' arrays; an (m, n) array is accepted too).

    Stable for coincident or clustered points. The points are sorted (a sorting network);
    n = 2: the closed form ``e^{x_2} · expm1(x_1 − x_2) / (x_1 − x_2)``; n ≥ 3: where the spread is
    below 0.05 the Taylor series about the mean, ``e^μ Σ_j h_j(x − μ) / (j + n − 1)!`` (``h_j`` the
    complete homogeneous symmetric polynomials; with |x − μ| < 0.05 ten terms reach 1e-17), else
    the recurrence ``(exp[x_2..x_n] − exp[x_1..x_{n−1}]) / (x_n − x_1)``, whose cancellation costs at
    most a factor (2 / 0.05)^(n−2) of the rounding error (≲ 1e-12 relative).
    """
    if isinstance(x, np.ndarray):
        x = [x[:, i] for i in range(x.shape[1])]
    x = [np.asarray(c, dtype="float64") for c in x]
    n = len(x)
    if n == 1:
        return np.exp(x[0])
    for a, b in _SORT_NET[n]:
        x[a], x[b] = np.minimum(x[a], x[b]), np.maximum(x[a], x[b])
    if n == 2:
        d = x[0] - x[1]
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.where(d != 0, np.expm1(d) / np.where(d != 0, d, 1.0), 1.0)
        return np.exp(x[1]) * r
    spread = x[-1] - x[0]
    out = np.empty(len(spread))
    small = spread < 0.05
    if small.any():
        xs = [c[small] for c in x]
        mu = sum(xs) / n
        nterms = 10
        h = np.zeros((nterms, len(mu)))  # h[j] = h_j(d_1..d_i), updated variable by variable
        h[0] = 1.0
        for c in xs:
            di = c - mu
            for j in range(1, nterms):
                h[j] += di * h[j - 1]
        w = np.array([1.0 / math.factorial(j + n - 1) for j in range(nterms)])
        out[small] = np.exp(mu) * (w @ h)
    big = ~small
    if big.all():
        out[:] = (_exp_dd(x[1:]) - _exp_dd(x[:-1])) / spread
    elif big.any():
        xb = [c[big] for c in x]
        out[big] = (_exp_dd(xb[1:]) - _exp_dd(xb[:-1])) / spread[big]
    return out


class CoolingTrace(NamedTuple):
    """Result of :func:`integrate`: ``frame`` (one row per sample, :data:`COOLING_COLUMNS`, exact
    time-averages over each sample) and ``states`` (shape (n + 1, 3): the secondary, primary and
    tower return temperatures at the sample edges, °C)."""

    frame: pd.DataFrame
    states: np.ndarray


def integrate(model: CoolingModel, heat_w, wetbulb_c, dt_s, initial=None) -> CoolingTrace:
    """Run the built-in plant over consecutive samples.

    Args:
        model: plant parameters.
        heat_w: heat into the secondary loop per sample (W): IT input power incl. conversion losses,
            the sample's mean (held constant over the sample).
        wetbulb_c: outdoor wet bulb per sample (°C), scalar or array.
        dt_s: length of each sample (s, > 0), scalar or array.
        initial: return temperatures (secondary, primary, tower; °C) at the first sample's start;
            default: the steady state of the first sample's inputs (the plant starts in equilibrium).

    Returns:
        :class:`CoolingTrace`.

    Method: inside sample k the inputs, flows and supply temperatures are constant, so the
    deviation ``e = x − x*_k`` from the sample's steady state obeys ``e' = A_k e`` with ``A_k``
    lower-bidiagonal (diagonal ``−f_i/τ_i``, sub-diagonal ``ṁ_s c_p / C_p``, ``ṁ_p c_p / C_t``).
    End state ``x*_k + exp(A_k h) e`` and sample mean ``x*_k + (1/h)∫₀ʰ exp(A_k σ) dσ · e`` are
    exact; the matrix functions of a bidiagonal matrix are products of its sub-diagonal with
    divided differences of the scalar function over the eigenvalues (:func:`_exp_dd`). The
    eigenvalues are all negative, so ``|exp(A h)|`` decays for every h: unconditionally stable.
    """
    heat, wb, h = _inputs(heat_w, wetbulb_c, dt_s)
    n = len(heat)
    if len(wb) != n or len(h) != n:
        raise ValueError(f"integrate: heat_w ({n}), wetbulb_c ({len(wb)}) and dt_s ({len(h)}) differ in length")
    if n and not (np.all(np.isfinite(heat)) and np.all(np.isfinite(wb))):
        raise ValueError("integrate: heat_w and wetbulb_c must be finite")
    if n and not np.all(h > 0):
        raise ValueError("integrate: every dt_s must be > 0")
    if n == 0:
        return CoolingTrace(pd.DataFrame({c: np.zeros(0) for c in COOLING_COLUMNS}), np.zeros((1, 3)))
    k = _controls(model, heat, wb)
    c = model.cp_j_per_kg_k
    cs, cpm, ct = model.thermal_masses_j_per_k
    a1 = k["ms"] * c / cs
    a2 = k["mp"] * c / cpm
    a3 = k["mt"] * c / ct
    g2h = k["ms"] * c / cpm * h
    g3h = k["mp"] * c / ct * h
    z1, z2, z3 = -a1 * h, -a2 * h, -a3 * h
    zero = np.zeros(n)
    # transition Φ = exp(A h) and mean operator Ψ = (1/h)∫₀ʰ exp(Aσ)dσ (lower triangular)
    f11, f22, f33 = np.exp(z1), np.exp(z2), np.exp(z3)
    f21 = g2h * _exp_dd([z1, z2])
    f32 = g3h * _exp_dd([z2, z3])
    f31 = g2h * g3h * _exp_dd([z1, z2, z3])
    p11 = _exp_dd([z1, zero])
    p22 = _exp_dd([z2, zero])
    p33 = _exp_dd([z3, zero])
    p21 = g2h * _exp_dd([z1, z2, zero])
    p32 = g3h * _exp_dd([z2, z3, zero])
    p31 = g2h * g3h * _exp_dd([z1, z2, z3, zero])
    s1, s2, s3 = k["x1"], k["x2"], k["x3"]

    states = np.empty((n + 1, 3))
    if initial is None:
        x1, x2, x3 = float(s1[0]), float(s2[0]), float(s3[0])
    else:
        x1, x2, x3 = (float(v) for v in initial)
    states[0] = (x1, x2, x3)
    # the only sequential part: the end state of each sample (plain floats: fastest in CPython)
    L = [a.tolist() for a in (s1, s2, s3, f11, f21, f22, f31, f32, f33)]
    out1, out2, out3 = [0.0] * n, [0.0] * n, [0.0] * n
    for i, (v1, v2, v3, F11, F21, F22, F31, F32, F33) in enumerate(zip(*L)):
        e1, e2, e3 = x1 - v1, x2 - v2, x3 - v3
        x1 = v1 + F11 * e1
        x2 = v2 + F21 * e1 + F22 * e2
        x3 = v3 + F31 * e1 + F32 * e2 + F33 * e3
        out1[i], out2[i], out3[i] = x1, x2, x3
    states[1:, 0], states[1:, 1], states[1:, 2] = out1, out2, out3
    e = states[:-1] - np.column_stack([s1, s2, s3])
    m1 = s1 + p11 * e[:, 0]
    m2 = s2 + p21 * e[:, 0] + p22 * e[:, 1]
    m3 = s3 + p31 * e[:, 0] + p32 * e[:, 1] + p33 * e[:, 2]
    cooling = k["cdu"] + k["fac"] + k["fan"]
    frame = pd.DataFrame({
        "pue": _pue(heat, cooling),
        "supply_temp_c": k["t_ss"],
        "return_temp_c": m1,
        "primary_supply_temp_c": k["t_ps"],
        "primary_return_temp_c": m2,
        "tower_supply_temp_c": k["t_ts"],
        "tower_return_temp_c": m3,
        "cooling_power_w": cooling,
        "cdu_pump_w": k["cdu"],
        "facility_pump_w": k["fac"],
        "tower_fan_w": k["fan"],
        "heat_rejected_w": k["mt"] * c * (m3 - k["t_ts"]),
        "wetbulb_c": np.array(wb, dtype="float64"),
    }, columns=list(COOLING_COLUMNS))
    return CoolingTrace(frame, states)


# --------------------------------------------------------------------------------------------
# wet bulb input
# --------------------------------------------------------------------------------------------


def _parse_wetbulb(spec):
    """``None`` | float | CSV path from a RunConfig ``wetbulb`` value."""
    if spec is None or isinstance(spec, (int, float)) and not isinstance(spec, bool):
        return None if spec is None else float(spec)
    s = str(spec).strip()
    try:
        return float(s)
    except ValueError:
        return s


def check_wetbulb(spec) -> None:
    """Check a RunConfig ``wetbulb`` value without running: None and numbers pass (their range is
    :class:`core.config.RunConfig`'s check); a CSV path must exist (as a run resolves it: from the
    working directory, else under the data folder) and be readable as :func:`wetbulb_bins` reads
    it (columns, numbers, ascending times, plausible °C). Raises ConfigError naming the file."""
    s = _parse_wetbulb(spec)
    if isinstance(s, str):
        _read_wetbulb_csv(s, 0)  # the epoch only shifts absolute times; every check is independent of it


def _read_wetbulb_csv(path: str, epoch: int) -> tuple[np.ndarray, np.ndarray, str]:
    from .data import data_dir

    p = Path(path).expanduser()
    if not p.is_absolute() and not p.exists() and (data_dir() / p).exists():
        p = data_dir() / p
    if not p.exists():
        raise ConfigError(f"wetbulb: CSV file not found: {path}")
    raw = p.read_bytes()
    try:
        df = pd.read_csv(p, comment="#")
    except Exception as exc:  # pandas raises several types
        raise ConfigError(f"wetbulb: cannot read {p}: {exc}") from exc
    cols = {c.strip().lower(): c for c in df.columns}
    if "wetbulb_c" not in cols:
        raise ConfigError(f"wetbulb: {p} needs a column 'wetbulb_c' (°C), has {list(df.columns)}")
    v = pd.to_numeric(df[cols["wetbulb_c"]], errors="coerce").to_numpy(dtype="float64")
    if "time" in cols:
        t = pd.to_numeric(df[cols["time"]], errors="coerce").to_numpy(dtype="float64")
    elif "unix_time" in cols:
        t = pd.to_numeric(df[cols["unix_time"]], errors="coerce").to_numpy(dtype="float64") - float(epoch)
    elif "timestamp" in cols:
        ts = pd.to_datetime(df[cols["timestamp"]], utc=True, errors="coerce")
        t = ((ts - pd.Timestamp(0, tz="UTC")).dt.total_seconds() - float(epoch)).to_numpy(dtype="float64", na_value=np.nan)
    else:
        raise ConfigError(
            f"wetbulb: {p} needs a time column: 'time' (s from the trace epoch), 'unix_time' (s since "
            f"1970-01-01 UTC) or 'timestamp' (ISO 8601, UTC unless it says otherwise)")
    bad = ~(np.isfinite(t) & np.isfinite(v))
    if bad.any():
        raise ConfigError(f"wetbulb: {p} row {int(np.argmax(bad)) + 2}: time or wetbulb_c is missing or not a number")
    if len(t) == 0:
        raise ConfigError(f"wetbulb: {p} has no rows")
    if len(t) > 1 and not np.all(np.diff(t) > 0):
        raise ConfigError(f"wetbulb: {p} times must be strictly ascending")
    if v.min() < -60 or v.max() > 45:
        raise ConfigError(f"wetbulb: {p} values {v.min():.1f}..{v.max():.1f} are not wet-bulb °C (Fahrenheit or Kelvin?)")
    return t, v, hashlib.sha256(raw).hexdigest()


def _pl_integral(t: np.ndarray, v: np.ndarray, x: np.ndarray) -> np.ndarray:
    """∫_{t[0]}^{x} of the piecewise-linear interpolant of (t, v), held constant outside [t0, tn]."""
    x = np.asarray(x, dtype="float64")
    if len(t) == 1:
        return (x - t[0]) * v[0]
    cum = np.concatenate([[0.0], np.cumsum(np.diff(t) * (v[:-1] + v[1:]) / 2.0)])
    xc = np.clip(x, t[0], t[-1])
    i = np.clip(np.searchsorted(t, xc, side="right") - 1, 0, len(t) - 2)
    vx = np.interp(xc, t, v)
    inside = cum[i] + (xc - t[i]) * (v[i] + vx) / 2.0
    return inside + np.minimum(x - t[0], 0.0) * v[0] + np.maximum(x - t[-1], 0.0) * v[-1]


def wetbulb_bins(spec, bin_start, bin_end, epoch: int = 0, default: float = 23.0) -> tuple[np.ndarray, dict]:
    """Wet bulb per sample (°C, exact mean over ``[bin_start, bin_end)``) and a provenance dict.

    ``spec``: None (``default``, the plant's design wet bulb), a number (°C, constant), or a CSV
    path with a ``wetbulb_c`` column and one time column: ``time`` (s from the trace epoch),
    ``unix_time`` (s since 1970 UTC; ``epoch`` = the trace epoch in Unix s) or ``timestamp`` (ISO
    8601). The series is interpolated linearly between rows and held constant beyond its ends.
    """
    b0 = np.asarray(bin_start, dtype="float64")
    b1 = np.asarray(bin_end, dtype="float64")
    s = _parse_wetbulb(spec)
    if s is None or isinstance(s, float):
        val = float(default if s is None else s)
        if not (-60 <= val <= 45):
            raise ConfigError(f"wetbulb: {val} is not a wet-bulb temperature in °C (-60..45)")
        return np.full(len(b0), val), {"kind": "constant", "wetbulb_c": val,
                                        "source": "design" if s is None else "config"}
    t, v, sha = _read_wetbulb_csv(s, epoch)
    ref = b0[0] if len(b0) else 0.0  # integrate relative to the window start (no cancellation)
    tt = t - ref
    f0 = _pl_integral(tt, v, b0 - ref)
    f1 = _pl_integral(tt, v, b1 - ref)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (f1 - f0) / (b1 - b0)
    return mean, {"kind": "csv", "path": str(s), "sha256": sha, "rows": int(len(t))}


# --------------------------------------------------------------------------------------------
# FMU path
# --------------------------------------------------------------------------------------------

#: Names an FMU's variables can be mapped to: two inputs and the outputs of COOLING_COLUMNS.
FMU_INPUTS = ("heat_w", "wetbulb_c")
FMU_OUTPUTS = tuple(c for c in COOLING_COLUMNS if c not in ("pue", "wetbulb_c"))
FMU_NAMES = FMU_INPUTS + FMU_OUTPUTS

_UNIT_SCALE = {"W": 1.0, "kW": 1e3, "MW": 1e6}


class FMUCoolingModel:
    """A site's cooling plant exported as an FMU (FMI 2.0 co-simulation), driven through ``fmpy``.

    The FMU gets the same inputs as the built-in model, held constant over each sample: the heat
    (``heat_w``: IT input power incl. losses; when mapped to a list of variables it is split
    equally among them, e.g. one per CDU) and the wet bulb (``wetbulb_c``). After each
    ``doStep`` over the sample the mapped outputs are read; a sample's value is the mean of its
    sub-step end points (``substeps`` per sample, trapezoidal with the value at its start).
    Units declared in the FMU are converted: K → °C, kW/MW → W (inputs likewise). Unmapped
    outputs are NaN; ``cooling_power_w`` is the FMU's own when mapped, else the sum of the mapped
    ``cdu_pump_w``, ``facility_pump_w`` and ``tower_fan_w``. ``pue`` = (heat + cooling) / heat.
    FMU time 0 is the start of the run's window.

    Raises ConfigError when fmpy is missing (``pip install twinsweep[fmu]``), the FMU is not FMI
    2.0 co-simulation, or a mapped variable does not exist.
    """

    def __init__(self, path: str | Path, variables: dict | tuple, substeps: int = 1):
        try:
            import fmpy  # noqa: F401
        except ImportError as exc:
            raise ConfigError("cooling: the FMU path needs fmpy (pip install 'twinsweep[fmu]')") from exc
        from fmpy import read_model_description

        self.path = str(path)
        if not Path(self.path).exists():
            raise ConfigError(f"cooling: FMU not found: {self.path}")
        self.variables = dict(variables)
        self.substeps = int(substeps)
        if self.substeps < 1:
            raise ConfigError("cooling: FMU substeps must be >= 1")
        try:
            self.md = read_model_description(self.path)
        except Exception as exc:
            raise ConfigError(f"cooling: cannot read FMU {self.path}: {exc}") from exc
        if not str(self.md.fmiVersion).startswith("2.") or self.md.coSimulation is None:
            raise ConfigError(f"cooling: {self.path} is not an FMI 2.0 co-simulation FMU (fmiVersion {self.md.fmiVersion})")
        by_name = {v.name: v for v in self.md.modelVariables}
        for k in ("heat_w",):
            if k not in self.variables:
                raise ConfigError("cooling: fmu_variables must map 'heat_w' to the FMU's heat input")
        self._vars: dict[str, list] = {}
        for k, names in self.variables.items():
            if k not in FMU_NAMES:
                raise ConfigError(f"cooling: unknown fmu_variables name {k!r}; allowed: {', '.join(FMU_NAMES)}")
            lst = list(names) if isinstance(names, (list, tuple)) else [names]
            missing = [nm for nm in lst if nm not in by_name]
            if missing:
                raise ConfigError(f"cooling: FMU {Path(self.path).name} has no variable(s) {missing} (for {k})")
            self._vars[k] = [by_name[nm] for nm in lst]
        self.sha256 = hashlib.sha256(Path(self.path).read_bytes()).hexdigest()

    @staticmethod
    def _unit(var) -> str | None:
        u = getattr(var, "unit", None)
        if not u and getattr(var, "declaredType", None) is not None:
            u = getattr(var.declaredType, "unit", None)
        return u

    def _to_fmu(self, name: str, var, value: float) -> float:
        u = self._unit(var)
        if name == "wetbulb_c" and u == "K":
            return value + 273.15
        if name == "heat_w" and u in _UNIT_SCALE:
            return value / _UNIT_SCALE[u]
        return value

    def _from_fmu(self, name: str, var, value: float) -> float:
        u = self._unit(var)
        if name.endswith("_temp_c") and u == "K":
            return value - 273.15
        if name.endswith("_w") and u in _UNIT_SCALE:
            return value * _UNIT_SCALE[u]
        return value

    def run(self, heat_w, wetbulb_c, dt_s) -> pd.DataFrame:
        """One row per sample with :data:`COOLING_COLUMNS` (see the class doc)."""
        from fmpy import extract
        from fmpy.fmi2 import FMU2Slave

        heat, wb, h = _inputs(heat_w, wetbulb_c, dt_s)
        n = len(heat)
        outs = [k for k in FMU_OUTPUTS if k in self._vars]
        res = {k: np.full(n, np.nan) for k in outs}
        unzip = extract(self.path)
        fmu = FMU2Slave(guid=self.md.guid, unzipDirectory=unzip,
                        modelIdentifier=self.md.coSimulation.modelIdentifier, instanceName="twinsweep_cooling")
        try:
            fmu.instantiate()
            fmu.setupExperiment(startTime=0.0)

            def set_inputs(i):
                hv = self._vars["heat_w"]
                fmu.setReal([v.valueReference for v in hv],
                            [self._to_fmu("heat_w", v, float(heat[i]) / len(hv)) for v in hv])
                if "wetbulb_c" in self._vars:
                    wv = self._vars["wetbulb_c"]
                    fmu.setReal([v.valueReference for v in wv],
                                [self._to_fmu("wetbulb_c", v, float(wb[i])) for v in wv])

            def read():
                vals = {}
                for k in outs:
                    vs = self._vars[k]
                    raw = fmu.getReal([v.valueReference for v in vs])
                    vals[k] = sum(self._from_fmu(k, v, float(x)) for v, x in zip(vs, raw))
                    if k.endswith("_temp_c"):
                        vals[k] /= len(vs)  # several temperature variables: their mean
                return vals

            if n:
                set_inputs(0)
            fmu.enterInitializationMode()
            fmu.exitInitializationMode()
            t = 0.0
            for i in range(n):
                set_inputs(i)
                prev = read()
                acc = {k: 0.0 for k in outs}
                sub = float(h[i]) / self.substeps
                for _ in range(self.substeps):
                    status = fmu.doStep(currentCommunicationPoint=t, communicationStepSize=sub)
                    if status not in (0, 1, None):
                        raise ConfigError(f"cooling: FMU doStep failed at t = {t} s (status {status})")
                    t += sub
                    cur = read()
                    for k in outs:
                        acc[k] += (prev[k] + cur[k]) / 2.0
                    prev = cur
                for k in outs:
                    res[k][i] = acc[k] / self.substeps
            fmu.terminate()
        finally:
            try:
                fmu.freeInstance()
            except Exception:
                pass
            shutil.rmtree(unzip, ignore_errors=True)
        if "cooling_power_w" not in res:
            parts = [res[k] for k in ("cdu_pump_w", "facility_pump_w", "tower_fan_w") if k in res]
            res["cooling_power_w"] = np.sum(parts, axis=0) if parts else np.full(n, np.nan)
        res["pue"] = _pue(heat, res["cooling_power_w"])
        res["wetbulb_c"] = np.array(wb, dtype="float64")
        return pd.DataFrame({c: res.get(c, np.full(n, np.nan)) for c in COOLING_COLUMNS}, columns=list(COOLING_COLUMNS))


# --------------------------------------------------------------------------------------------
# timeline
# --------------------------------------------------------------------------------------------


def _segments(times, heat_steps, t0: int, t1: int, bin_start: np.ndarray):
    """Cut ``[t0, t1)`` at every change point of the heat step function and every sample start.

    Returns ``(cuts, heat, dt, first)``: piece starts (int64), heat on each piece (W), piece lengths
    (s) and the index of each sample's first piece (for ``np.add.reduceat``).
    """
    starts, vals = step_segments(times, heat_steps, t0, t1)
    cuts = np.union1d(starts, np.asarray(bin_start, dtype="int64"))
    heat = np.asarray(vals, dtype="float64")[np.searchsorted(starts, cuts, side="right") - 1]
    dt = np.diff(np.append(cuts, int(t1))).astype("float64")
    first = np.searchsorted(cuts, bin_start, side="left")
    return cuts, heat, dt, first


def apply_cooling(timeline: pd.DataFrame, system, steps: pd.DataFrame, t_end: int, wetbulb=None,
                  epoch: int = 0, model: CoolingModel | None = None) -> tuple[pd.DataFrame, dict, pd.DataFrame]:
    """The timeline with cooling: :data:`COOLING_COLUMNS` appended and ``facility_power_w``
    raised by ``cooling_power_w``.

    The built-in model is integrated on the exact heat step function: the window is cut at every
    change point of the engine's ``steps`` *and* every sample start, each piece is integrated
    exactly (:func:`integrate`), and each sample gets the exact time-average of its pieces. The
    result therefore does not depend on the sample period (only the wet-bulb series, averaged over
    each piece, is resampled; a constant wet bulb gives period-independent results to rounding).
    An FMU (:class:`FMUCoolingModel`) is stepped once per sample with the sample's mean inputs.

    Args:
        timeline: from :func:`core.power.build_timeline` (``time`` = sample starts from the window
            start, ``it_power_w``, ``loss_w``, ``facility_power_w``).
        system: the machine (its ``[cooling]`` table, or the generic plant for its peak power;
            its converters give the heat ``it + loss``).
        steps: ``EngineResult.steps`` (``time``, ``it_power_w``).
        t_end: end of the window (s).
        wetbulb: None (the plant's design wet bulb), °C, or a CSV path (:func:`wetbulb_bins`).
        epoch: the trace epoch (Unix s), for CSVs with absolute times.
        model: override the system's model (tests, notebooks).

    Returns:
        ``(timeline, info, pieces)``: ``info`` (JSON-ready, for the manifest) names the model
        (built-in parameters, or FMU and its sha256) and the wet-bulb source; ``pieces`` is the
        integration grid for :func:`core.stats.compute_stats`: ``time`` (piece start), ``dt_s``,
        ``heat_w``, the :data:`COOLING_COLUMNS` as piece means, and ``return_temp_start_c`` /
        ``return_temp_end_c`` / ``tower_return_temp_start_c`` / ``tower_return_temp_end_c``
        (instantaneous values at the piece edges).
    """
    m = model if model is not None else cooling_model_for(system)
    tl = timeline.copy()
    bstart = tl["time"].to_numpy(dtype="int64")
    info: dict[str, Any] = {"enabled": True, "status": m.status}
    if len(bstart) == 0:
        for col in COOLING_COLUMNS:
            tl[col] = np.zeros(0)
        return tl, info, pd.DataFrame({"time": np.zeros(0, dtype="int64")})
    t0, t1 = int(bstart[0]), int(t_end)
    bend = np.append(bstart[1:], t1)
    heat_bins = tl["it_power_w"].to_numpy(dtype="float64") + tl["loss_w"].to_numpy(dtype="float64")
    if m.fmu:
        dt = (bend - bstart).astype("float64")
        wb, wb_info = wetbulb_bins(wetbulb, bstart, bend, epoch, m.design_wetbulb_c)
        fm = FMUCoolingModel(m.fmu, dict(m.fmu_variables))
        frame = fm.run(heat_bins, wb, dt)
        info.update({"model": "fmu", "fmu": Path(m.fmu).name, "fmu_sha256": fm.sha256,
                     "fmu_variables": {k: (list(v) if isinstance(v, tuple) else v) for k, v in m.fmu_variables}})
        pieces = frame.copy()
        pieces.insert(0, "time", bstart)
        pieces.insert(1, "dt_s", dt)
        pieces.insert(2, "heat_w", heat_bins)
        for c in ("return_temp", "tower_return_temp"):
            pieces[f"{c}_start_c"] = pieces[f"{c}_c"]
            pieces[f"{c}_end_c"] = pieces[f"{c}_c"]
    else:
        it = steps["it_power_w"].to_numpy(dtype="float64", na_value=np.nan)
        heat_steps = np.asarray(convert(system, it)[0], dtype="float64")
        cuts, heat, dt, first = _segments(steps["time"].to_numpy(), heat_steps, t0, t1, bstart)
        wb, wb_info = wetbulb_bins(wetbulb, cuts, cuts + dt.astype("int64"), epoch, m.design_wetbulb_c)
        trace = integrate(m, heat, wb, dt)
        pieces = trace.frame.copy()
        pieces.insert(0, "time", cuts)
        pieces.insert(1, "dt_s", dt)
        pieces.insert(2, "heat_w", heat)
        pieces["return_temp_start_c"] = trace.states[:-1, 0]
        pieces["return_temp_end_c"] = trace.states[1:, 0]
        pieces["tower_return_temp_start_c"] = trace.states[:-1, 2]
        pieces["tower_return_temp_end_c"] = trace.states[1:, 2]
        blen = (bend - bstart).astype("float64")
        cols = [c for c in COOLING_COLUMNS if c != "pue"]
        sums = np.add.reduceat(pieces[cols].to_numpy(dtype="float64") * dt[:, None], first, axis=0)
        frame = pd.DataFrame(sums / blen[:, None], columns=cols)
        frame["pue"] = _pue(heat_bins, frame["cooling_power_w"].to_numpy())
        info.update({"model": "builtin", "parameters": m.to_dict()})
    info["wetbulb"] = wb_info
    for col in COOLING_COLUMNS:
        tl[col] = frame[col].to_numpy(dtype="float64")
    tl["facility_power_w"] = heat_bins + tl["cooling_power_w"].to_numpy(dtype="float64")
    return tl, info, pieces
