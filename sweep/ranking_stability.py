"""Do policy rankings survive what we cannot know about the machine? (issue 15 item 3)

:func:`ranking_stability` ranks every built-in policy × backfill variant on the busiest weeks of a
trace, by mean wait (censored: jobs still queued at the window end count with their wait so far,
``wait_censored_mean_s``) and by mean bounded slowdown (``bsld_mean``), under

- the *blind* machine (the constant fitted on the fitting window; on most logs the nominal one),
- the *informed* machine (the availability calendar inferred from the recorded busy-node counts),
- the informed machine with run times perturbed by 1 % (seeds 1..S: the study's own noise),

and compares the rankings with Kendall's τ (``scipy.stats.kendalltau``, τ-b) per window and
metric. Values within :data:`TIE_REL_TOL` (0.1 %) of each other tie (:func:`tie_groups`): a
difference a study would print as the same 3 significant digits is no order. A window × metric in
which every variant ties under both machines has no ranking (``tau_blind_vs_informed`` None,
``ranked`` false): it is counted in ``unranked_window_metrics`` and left out of the minimum and
the shares below; when one machine ranks and the other sees every variant tie, τ is 0.

Each window starts from the recorded state at its start (DESIGN.md §3.9), as a sweep's windows
do — under *both* machines. So "blind" here means the blind *machine model*, not blind
mode in :mod:`sweep.validate`'s sense: the jobs running and queued at each week's start are read
from the log (``initial_state`` in the result says so). What is compared is how the ranking of
variants moves with the machine model from one shared starting state; a study's own windows
start the same way. The variants are the built-in policies × backfill variants, without the
site's options (a ``[site]`` table's clock rules or classes are not applied here). Keys (``validation.json["ranking_stability"]``): ``kendall_tau_min_blind_vs_informed``,
``kendall_tau_min_seeds`` (minimum over windows, metrics and seeds of τ between the informed
ranking and a perturbed one), ``top3_same_frac`` (share of window × metric whose top-3 set is the
same blind and informed), ``top1_gap_exceeds_seed_spread_frac`` (share whose informed winner leads
the runner-up by more than the winner's spread over the seeds) and the per-window tables. A trace
whose submit span holds no full window, or whose windows rank nothing (every variant ties
everywhere under both machines: OSC-Clust, 13 % busy once the archive removed 72 % of its jobs),
gets ``None`` figures and ``skipped`` (why).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from twinsweep.core.backfill import BUILTIN_BACKFILLS
from twinsweep.core.config import Perturbation, RunConfig
from twinsweep.core.partitions import with_pool_nodes
from twinsweep.core.run import simulate
from twinsweep.core.workload import Workload

#: Window length (s): one week.
WEEK_S = 7 * 86400
#: Metrics the rankings are made by (stats.json system keys; lower is better).
#: Issue 15's goal for blind-mode rankings: Kendall's τ between the blind and the informed twin of
#: at least this on every busy window (stated beside the figure on the console and the page).
TAU_GOAL = 0.7


def minimum_text(v: float | None) -> str:
    """A minimum (τ over windows) for people, rounded *down* to 2 decimals, so that a printed
    minimum never overstates it (0.7576 -> ``0.75``, not ``0.76``); ``n/a`` for None. The console,
    the validation page's and the README's tables all print it so."""
    return "n/a" if v is None else f"{np.floor(v * 100 + 1e-9) / 100:.2f}"
RANK_METRICS = ("wait_censored_mean_s", "bsld_mean")
#: Relative difference (0.1 %) below which two variants' values tie in a ranking (:func:`tie_groups`):
#: the figures a study reports carry 3 significant digits, and no operator acts on a smaller
#: difference. Declared once for every trace.
TIE_REL_TOL = 1e-3


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


def tie_groups(vals: dict[str, float], rel_tol: float = TIE_REL_TOL) -> dict[str, float]:
    """Each variant's value replaced by the smallest value of its *practical tie group*: values
    sorted, and each within ``rel_tol`` × its own magnitude of the one before it joins that one's
    group (single linkage; ``inf`` only ties ``inf``; any two within 1e-9 of the unit tie, for
    values near 0). Returns a dict with the same keys.

    A difference below :data:`TIE_REL_TOL` of the value is no ranking: on OSC-Clust the twelve
    variants' mean waits of one week were 5863.72 s and 5863.75 s, which Kendall's τ read as an
    order (τ 0 against a machine on which all twelve were 5863.66 s)."""
    order = sorted(vals.items(), key=lambda kv: (kv[1], kv[0]))
    out, rep, prev = {}, None, None
    for name, v in order:
        close = v == prev or (prev is not None and np.isfinite(v) and np.isfinite(prev)
                              and abs(v - prev) <= max(rel_tol * max(abs(v), abs(prev)), 1e-9))
        if not close:
            rep = v
        out[name] = rep
        prev = v
    return out


def _ranks(vals: dict[str, float]) -> bool:
    """Whether ``vals`` (after :func:`tie_groups`) orders any two variants."""
    return len(set(vals.values())) > 1


def _order(g: dict[str, float]) -> list[tuple[str, float]]:
    """``(variant, value)`` best first, ties broken by name."""
    return sorted(g.items(), key=lambda kv: (kv[1], kv[0]))


def _tau_grouped(ga: dict, gb: dict) -> float | None:
    """:func:`_tau` of two rankings already in their tie groups (:func:`tie_groups`)."""
    from scipy.stats import kendalltau

    if not _ranks(ga) and not _ranks(gb):
        return None
    if not _ranks(ga) or not _ranks(gb):
        return 0.0
    keys = sorted(ga)
    return float(kendalltau([ga[k] for k in keys], [gb[k] for k in keys]).statistic)


def _tau(a: dict, b: dict) -> float | None:
    """Kendall's τ-b (scipy) of two rankings of the same variants, on their practical tie groups
    (:func:`tie_groups`). ``None`` when neither ranking orders any two variants (every variant ties
    under both: nothing to compare); 0.0 when exactly one of them does (one machine model sees a
    difference the other does not: no association)."""
    return _tau_grouped(tie_groups(a), tie_groups(b))


def _top(vals: dict, k: int) -> set:
    """The ``k`` best variants (lowest value), practical ties (:func:`tie_groups`) broken by name."""
    return {name for name, _ in _order(tie_groups(vals))[:k]}


def ranking_stability(config: RunConfig, workload: Workload, sys_blind, sys_informed, policies: list[str],
                      windows: int = 4, seeds: int = 2, span: tuple[int, int] | None = None,
                      noise_sigma: float = 0.01, window_s: int = WEEK_S) -> dict:
    """See the module docstring. ``config`` gives kill and the sample period; ``workload`` is the
    trace as loaded (recorded starts are read only for each window's initial state);
    ``policies`` the ordering policies; ``span`` the range the weeks are taken from (default the
    trace's submit span); ``window_s`` the window length (a week). Returns the
    ``ranking_stability`` dict."""
    wl_nodes = with_pool_nodes(workload, sys_informed)  # each job in its pool's node type (core.partitions)
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
    no_ranking = 0
    for s in starts:
        blind = values(sys_blind, s, 0)
        inf = values(sys_informed, s, 0)
        seeded = [values(sys_informed, s, k) for k in range(1, seeds + 1)]
        row = {"start": s, "end": s + window_s, "metrics": {}}
        for m in RANK_METRICS:
            gb, gi = tie_groups(blind[m]), tie_groups(inf[m])  # each ranking grouped once
            ob, oi = _order(gb), _order(gi)
            tb = _tau_grouped(gb, gi)
            ts = [_tau_grouped(gi, tie_groups(sv[m])) for sv in seeded]
            same3 = {n for n, _ in ob[:3]} == {n for n, _ in oi[:3]}
            win = oi[0][0]
            at_win = [sv[m][win] for sv in seeded + [inf]]
            spread = max(at_win) - min(at_win)
            gap = next((v - oi[0][1] for _, v in oi if v > oi[0][1]), 0.0)
            ranked = tb is not None
            if ranked:
                taus_bi.append(tb)
                top3.append(same3)
                gaps.append(gap > spread)
            else:
                no_ranking += 1
            taus_seed.extend(t for t in ts if t is not None)
            row["metrics"][m] = {"tau_blind_vs_informed": tb, "tau_seeds": ts, "top3_same": same3,
                                 "ranked": ranked,
                                 "winner_informed": win, "winner_blind": ob[0][0],
                                 "top1_gap": gap, "winner_seed_spread": spread,
                                 "blind": blind[m], "informed": inf[m]}
        per_window.append(row)
    skipped = None
    if not starts and (t1 - t0) >= window_s:  # full windows, none with work (nodes x run time) in it
        skipped = (f"none of the trace's {(t1 - t0) // window_s:,} full window(s) of {window_s / 86400:g} d holds "
                   "submitted work (every job submitted in them asks for no nodes or runs for 0 s): no ranking to "
                   "compare")
    elif not starts:
        skipped = (f"the trace's submit span ({(t1 - t0) / 86400:.1f} d) holds no full window of {window_s / 86400:g} d "
                   "with submitted work: no ranking to compare")
    elif not taus_bi:
        skipped = (f"every variant ties (within {TIE_REL_TOL:.1%}) on every metric in each of the {len(starts)} busiest "
                   "windows, under both machine models: no policy or backfill variant changes any job's wait there "
                   "(the machine queues no job a variant could reorder), so there is no ranking to compare")
    return {
        "windows": len(starts), "window_s": window_s, "seeds": seeds, "runtime_sigma": noise_sigma,
        **({"skipped": skipped} if skipped else {}),
        "initial_state": ("recorded: every window, under both machines, starts from the log's running and queued "
                          "jobs at its start (DESIGN.md §3.9); 'blind' names the machine model, not blind mode"),
        "metrics": list(RANK_METRICS), "variants": [f"{p}+{b}" for p, b in combos],
        "tie_rel_tol": TIE_REL_TOL,
        "unranked_window_metrics": no_ranking,
        "kendall_tau_min_blind_vs_informed": min(taus_bi) if taus_bi else None,
        "kendall_tau_min_seeds": min(taus_seed) if taus_seed else None,
        "top3_same_frac": float(np.mean(top3)) if top3 else None,
        "top1_gap_exceeds_seed_spread_frac": float(np.mean(gaps)) if gaps else None,
        "per_window": per_window,
    }
