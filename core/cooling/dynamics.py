"""Exact integration of the cooling plant's three thermal masses over pieces of constant input
(matrix exponential in closed form; package :mod:`core.cooling`, docs/cooling.md)."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd

from .model import COOLING_COLUMNS, CoolingModel
from .steady import _controls, _inputs, _pue


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
