"""Node availability calendars inferred from a log (issue 15 item 2; docs/validation.md).

A calendar is a tuple of ``(start, end, nodes_down)`` periods (s from the trace epoch,
``[start, end)``), the form of ``System.availability`` that the engine honours
(:meth:`core.engine.Engine.run`). Two estimators, with their constants declared here once for
every trace (no per-trace tuning):

- :func:`informed_calendar` — from the recorded **busy-node counts** over time (what node-state
  telemetry gives), never from which job started when: in each block of :data:`BLOCK_S` the
  usable capacity is taken to be the most nodes the log ever had busy in it; a block whose
  recorded queue held a job all along and whose peak stayed below the machine's size had the rest
  unavailable. Blocks whose queue was empty at some moment say nothing (idle nodes may just have
  had no work) and are left at full capacity.
- :func:`blind_constant` — one constant number of unusable nodes, fitted on a *fitting window*
  only: the median over its blocks of what :func:`informed_calendar` infers; applied to the whole
  trace (:func:`constant_calendar`).

Inputs are *schedules* as in :mod:`core.fidelity` (``start_time``, ``end_time``, ``nodes``,
``submit_time``); only their aggregates over time (busy nodes, queued jobs) are used.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Block length of the estimators (s): 6 h. Declared once for every trace (chosen among 3, 6, 12 and
#: 24 h on KTH-SP2 and SDSC-SP2: 6 h was the only one within 25 % on the mean wait of both).
BLOCK_S = 21600


def _step(times_plus, times_minus, weights_plus, weights_minus):
    """Step function (change times, value from each time on) of Σ +w at t⁺ and −w at t⁻."""
    t = np.concatenate([times_plus, times_minus])
    w = np.concatenate([weights_plus, -weights_minus])
    order = np.argsort(t, kind="stable")
    t, w = t[order], w[order]
    ut, idx = np.unique(t, return_index=True)
    sums = np.add.reduceat(w, idx) if len(w) else w
    return ut, np.cumsum(sums)


def busy_and_queued(schedule: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Recorded busy nodes and queued jobs as step functions.

    Returns ``(t_busy, busy, t_queue, queued)``: change times (int64 s, ascending) and the value
    from each of them on. A job is busy on ``[start, end)`` with its nodes and queued on
    ``[submit, start)``. Jobs without a start or an end (never ran) are not counted.
    """
    s = schedule["start_time"].astype("Int64")
    e = schedule["end_time"].astype("Int64")
    ok = (s.notna() & e.notna() & schedule["nodes"].notna()).to_numpy()
    st = s.to_numpy(dtype="float64", na_value=np.nan)[ok].astype(np.int64)
    en = e.to_numpy(dtype="float64", na_value=np.nan)[ok].astype(np.int64)
    n = schedule["nodes"].astype("Int64").to_numpy(dtype="float64", na_value=0)[ok].astype(np.int64)
    sub = schedule["submit_time"].to_numpy(dtype="int64")[ok]
    tb, busy = _step(st, en, n, n)
    ones = np.ones(len(st), dtype=np.int64)
    tq, queued = _step(np.minimum(sub, st), st, ones, ones)
    return tb, busy, tq, queued


def _block_extremes(t: np.ndarray, v: np.ndarray, edges: np.ndarray, fn) -> np.ndarray:
    """``fn`` (np.maximum or np.minimum) of a step function over each ``[edges[i], edges[i+1])``."""
    out = np.empty(len(edges) - 1, dtype=np.int64)
    for i in range(len(edges) - 1):
        a, b = edges[i], edges[i + 1]
        k0 = np.searchsorted(t, a, side="right") - 1  # value in force at a
        k1 = np.searchsorted(t, b, side="left")  # changes before b
        vals = v[max(k0, 0):k1] if k1 > max(k0, 0) else v[max(k0, 0):max(k0, 0) + 1]
        if k0 < 0:
            vals = np.concatenate([[0], v[0:k1]])
        out[i] = int(fn.reduce(vals)) if len(vals) else 0
    return out


def block_down_nodes(schedule: pd.DataFrame, nodes: int, t0: int, t1: int,
                     block_s: int = BLOCK_S) -> tuple[np.ndarray, np.ndarray]:
    """Nodes inferred unusable per block of ``[t0, t1)``: ``nodes − max busy`` in blocks whose
    recorded queue never emptied, else 0 (never negative: a log busier than the machine's size
    gives 0). Returns ``(edges, down)``: block edges (int64, len = blocks + 1) and int64 counts.
    Raises ValueError on an empty window."""
    if t1 <= t0:
        raise ValueError(f"window [{t0}, {t1}) is empty")
    edges = np.append(np.arange(t0, t1, block_s, dtype=np.int64), np.int64(t1))
    tb, busy, tq, queued = busy_and_queued(schedule)
    peak = _block_extremes(tb, busy, edges, np.maximum)
    qmin = _block_extremes(tq, queued, edges, np.minimum)
    down = np.where(qmin > 0, np.maximum(0, nodes - peak), 0)
    return edges, down.astype(np.int64)


def informed_calendar(schedule: pd.DataFrame, nodes: int, t0: int, t1: int,
                      block_s: int = BLOCK_S) -> tuple[tuple[int, int, int], ...]:
    """The calendar of ``[t0, t1)`` from the recorded busy-node and queue counts (see the module
    docstring): one period per block with nodes down (adjacent blocks with the same count merged)."""
    edges, down = block_down_nodes(schedule, nodes, t0, t1, block_s)
    out: list[list[int]] = []
    for i, k in enumerate(down.tolist()):
        if k <= 0 or k >= nodes:
            continue
        a, b = int(edges[i]), int(edges[i + 1])
        if out and out[-1][1] == a and out[-1][2] == k:
            out[-1][1] = b
        else:
            out.append([a, b, int(k)])
    return tuple(tuple(p) for p in out)


def blind_constant(schedule: pd.DataFrame, nodes: int, fit0: int, fit1: int,
                   block_s: int = BLOCK_S) -> tuple[int, int]:
    """Nodes to take out of service for the whole trace, fitted on ``[fit0, fit1)`` only: the
    median (rounded down) over the fitting window's blocks of :func:`block_down_nodes`, clipped so
    that the largest job of the fitting window still fits (a constant hold would otherwise keep
    full-machine jobs queued for ever). Returns ``(clipped, median)``."""
    _, down = block_down_nodes(schedule, nodes, fit0, fit1, block_s)
    med = int(np.floor(np.median(down))) if len(down) else 0
    sub = schedule["submit_time"].to_numpy(dtype="int64")
    n = schedule["nodes"].astype("Int64").to_numpy(dtype="float64", na_value=0)
    in_fit = (sub >= fit0) & (sub < fit1) & (n <= nodes)
    largest = int(n[in_fit].max()) if in_fit.any() else 0
    return max(0, min(med, nodes - largest)), med


def constant_calendar(nodes_down: int, t0: int, t1: int) -> tuple[tuple[int, int, int], ...]:
    """One period ``[t0, t1)`` with ``nodes_down`` nodes down (empty when 0)."""
    return ((int(t0), int(t1), int(nodes_down)),) if nodes_down > 0 else ()
