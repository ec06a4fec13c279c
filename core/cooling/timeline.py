"""Cooling on a run's timeline: :func:`apply_cooling` cuts the window at every change of the IT
heat and every sample start, runs the plant (built-in or FMU) and appends the cooling columns
(package :mod:`core.cooling`, docs/cooling.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..power import convert, it_equipment_power, step_segments
from .dynamics import integrate
from .fmu import FMUCoolingModel
from .model import COOLING_COLUMNS, CoolingModel, cooling_model_for
from .steady import _pue
from .wetbulb import wetbulb_bins


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
        info.update({"model": "builtin", "parameters": m.to_dict()})
    # PUE of each sample: facility / IT equipment power (core.power.it_equipment_power: a room UPS's
    # losses and the CDUs are facility overhead), both sample means (the map is affine)
    frame["pue"] = _pue(heat_bins, frame["cooling_power_w"].to_numpy(),
                        it_equipment_power(system, tl["it_power_w"].to_numpy(dtype="float64")))
    info["wetbulb"] = wb_info
    for col in COOLING_COLUMNS:
        tl[col] = frame[col].to_numpy(dtype="float64")
    tl["facility_power_w"] = heat_bins + tl["cooling_power_w"].to_numpy(dtype="float64")
    return tl, info, pieces
