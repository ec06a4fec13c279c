"""Do policy rankings survive what we cannot know about the machine? (issue 15 item 3)

:func:`ranking_stability` ranks every built-in policy × backfill variant on the busiest weeks of a
trace, by mean wait (censored: jobs still queued at the window end count with their wait so far,
``wait_censored_mean_s``) and by mean bounded slowdown (``bsld_mean``), under

- the *blind* machine (the constant fitted on the fitting window; on most logs the nominal one),
- the *informed* machine (the availability calendar inferred from the recorded busy-node counts),
- the informed machine with run times perturbed by 1 % (seeds 1..S: the study's own noise),

and compares the rankings with Kendall's τ (``scipy.stats.kendalltau``, τ-b) per window and
metric. Each window starts from the recorded state at its start (DESIGN.md §3.9), as a sweep's
windows do — under *both* machines. So "blind" here means the blind *machine model*, not blind
mode in :mod:`sweep.validate`'s sense: the jobs running and queued at each week's start are read
from the log (``initial_state`` in the result says so). What is compared is how the ranking of
variants moves with the machine model from one shared starting state; a study's own windows
start the same way. The variants are the built-in policies × backfill variants, without the
site's options (a ``[site]`` table's clock rules or classes are not applied here). Keys (``validation.json["ranking_stability"]``): ``kendall_tau_min_blind_vs_informed``,
``kendall_tau_min_seeds`` (minimum over windows, metrics and seeds of τ between the informed
ranking and a perturbed one), ``top3_same_frac`` (share of window × metric whose top-3 set is the
same blind and informed), ``top1_gap_exceeds_seed_spread_frac`` (share whose informed winner leads
the runner-up by more than the winner's spread over the seeds) and the per-window tables. A trace
whose submit span holds no full window gets ``windows = 0``, ``None`` figures and ``skipped`` (why).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from twinsweep.core.backfill import BUILTIN_BACKFILLS
from twinsweep.core.config import Perturbation, RunConfig
from twinsweep.core.run import simulate
from twinsweep.core.workload import Workload

#: Window length (s): one week.
WEEK_S = 7 * 86400
#: Metrics the rankings are made by (stats.json system keys; lower is better).
RANK_METRICS = ("wait_censored_mean_s", "bsld_mean")


def busiest_weeks(workload: Workload, nodes: int, n: int, t0: int, t1: int, window_s: int = WEEK_S) -> list[int]:
    """Starts of the ``n`` non-overlapping windows of ``window_s`` (a week; aligned on ``t0``) of
    ``[t0, t1)`` with the most offered work (Σ nodes × run time of the jobs submitted in them;
    submit-side information only), in time order. ``nodes``: the machine's (unused beyond
    documentation of the unit: node-seconds)."""
    j = workload.jobs
    sub = j["submit_time"].to_numpy(dtype="int64")
    work = (j["nodes"].astype("float64").to_numpy(na_value=0) * j["run_time"].astype("float64").to_numpy(na_value=0))
    k = (sub - t0) // window_s
    nweeks = max(0, (t1 - t0) // window_s)
    ok = (sub >= t0) & (k < nweeks)
    load = np.bincount(k[ok], weights=work[ok], minlength=nweeks)
    top = np.argsort(-load, kind="stable")[:n]
    return sorted(int(t0 + w * window_s) for w in top if load[w] > 0)


def _tau(a: dict, b: dict) -> float:
    from scipy.stats import kendalltau

    keys = sorted(a)
    x, y = [a[k] for k in keys], [b[k] for k in keys]
    if len(set(x)) < 2 or len(set(y)) < 2:
        return 1.0 if x == y else 0.0
    return float(kendalltau(x, y).statistic)


def _top(vals: dict, k: int) -> set:
    return {name for name, _ in sorted(vals.items(), key=lambda kv: (kv[1], kv[0]))[:k]}


def ranking_stability(config: RunConfig, workload: Workload, sys_blind, sys_informed, policies: list[str],
                      windows: int = 4, seeds: int = 2, span: tuple[int, int] | None = None,
                      noise_sigma: float = 0.01, window_s: int = WEEK_S) -> dict:
    """See the module docstring. ``config`` gives kill and the sample period; ``workload`` is the
    trace as loaded (recorded starts are read only for each window's initial state);
    ``policies`` the ordering policies; ``span`` the range the weeks are taken from (default the
    trace's submit span); ``window_s`` the window length (a week). Returns the
    ``ranking_stability`` dict."""
    wl_nodes = workload.with_nodes(sys_informed.cores_per_node)
    sub = workload.jobs["submit_time"].to_numpy(dtype="int64")
    t0, t1 = span or (int(sub.min()), int(sub.max()) + 1)
    starts = busiest_weeks(wl_nodes, sys_informed.nodes, windows, t0, t1, window_s)
    combos = [(p, b) for p in policies for b in BUILTIN_BACKFILLS]
    pert = Perturbation(runtime_sigma=noise_sigma)

    def values(system, start, seed):
        out = {m: {} for m in RANK_METRICS}
        for p, b in combos:
            cfg = dataclasses.replace(config, policy=p, backfill=b, options=(), start=start, duration=window_s, seed=seed,
                                      perturbation=pert if seed else Perturbation())
            st = simulate(cfg, workload=workload, system=system).stats["system"]
            for m in RANK_METRICS:
                v = st.get(m)
                out[m][f"{p}+{b}"] = float("inf") if v is None else float(v)
        return out

    per_window = []
    taus_bi, taus_seed, top3, gaps = [], [], [], []
    for s in starts:
        blind = values(sys_blind, s, 0)
        inf = values(sys_informed, s, 0)
        seeded = [values(sys_informed, s, k) for k in range(1, seeds + 1)]
        row = {"start": s, "end": s + window_s, "metrics": {}}
        for m in RANK_METRICS:
            tb = _tau(blind[m], inf[m])
            ts = [_tau(inf[m], sv[m]) for sv in seeded]
            same3 = _top(blind[m], 3) == _top(inf[m], 3)
            order = sorted(inf[m].items(), key=lambda kv: (kv[1], kv[0]))
            win = order[0][0]
            spread = (max(sv[m][win] for sv in seeded + [inf]) - min(sv[m][win] for sv in seeded + [inf]))
            gap = order[1][1] - order[0][1] if len(order) > 1 else 0.0
            taus_bi.append(tb)
            taus_seed.extend(ts)
            top3.append(same3)
            gaps.append(gap > spread)
            row["metrics"][m] = {"tau_blind_vs_informed": tb, "tau_seeds": ts, "top3_same": same3,
                                 "winner_informed": win, "winner_blind": min(blind[m], key=lambda k: (blind[m][k], k)),
                                 "top1_gap": gap, "winner_seed_spread": spread,
                                 "blind": blind[m], "informed": inf[m]}
        per_window.append(row)
    skipped = None if starts else (
        f"the trace's submit span ({(t1 - t0) / 86400:.1f} d) holds no full window of {window_s / 86400:g} d with "
        "submitted work: no ranking to compare")
    return {
        "windows": len(starts), "window_s": window_s, "seeds": seeds, "runtime_sigma": noise_sigma,
        **({"skipped": skipped} if skipped else {}),
        "initial_state": ("recorded: every window, under both machines, starts from the log's running and queued "
                          "jobs at its start (DESIGN.md §3.9); 'blind' names the machine model, not blind mode"),
        "metrics": list(RANK_METRICS), "variants": [f"{p}+{b}" for p, b in combos],
        "kendall_tau_min_blind_vs_informed": min(taus_bi) if taus_bi else None,
        "kendall_tau_min_seeds": min(taus_seed) if taus_seed else None,
        "top3_same_frac": float(np.mean(top3)) if top3 else None,
        "top1_gap_exceeds_seed_spread_frac": float(np.mean(gaps)) if gaps else None,
        "per_window": per_window,
    }
