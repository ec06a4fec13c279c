"""Incentive and weighted policies (core/policies.py): hand-computed queue orders, one-hot weights
reduce to fcfs / sjf / ljf (identical schedules), fair share, registration and errors."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from twinsweep.core.accounts import Accounts, Usage
from twinsweep.core.backfill import BACKFILLS
from twinsweep.core.config import RunConfig
from twinsweep.core.engine import Engine, select_window
from twinsweep.core.errors import ConfigError
from twinsweep.core.policies import INCENTIVE_POLICIES, Weighted, parse_weights
from twinsweep.core.jobview import JobView, SchedulerContext
from twinsweep.core.scheduler import available_policies
from twinsweep.core.system import System
from twin_helpers import frame, schedule_of


def run_engine(jobs, nodes, policy, backfill="none", options=None, kill=True, accounts=None):
    f = frame(jobs)
    system = System(name="tiny", title="tiny", nodes=nodes)
    win, t0, t1 = select_window(f, None, None, policy == "replay", kill)
    return Engine(win, system, policy, backfill, kill, [100.0] * len(win), 10.0, t0, t1, options=options,
                  accounts=accounts).run()


# ------------------------------------------------------------------ incentive policies, by hand
#   account  energy  node·s  avg P (W/node)  EDP sum  ED²P sum  Fugaku points
#   A        1 000   10      100             5 000    1e5       (2375 − 1000)/125 = 11
#   B        4 000   20      200             1 000    9e5       (2375 − 4000)/125 = −13
#   C        1 500   30      50              3 600    2e4       (2375 − 1500)/125 = 7
#   D        3 000   20      150             2 000    5e5       (2375 − 3000)/125 = −5
# Ē = 9 500/4 = 2 375 J, P̄ = (100 + 200 + 50 + 150)/4 = 125 W per node.
# Account Z is unknown: neutral values = the table means: P 125, EDP 2 900, ED²P 3.8e5, 0 points.
HAND_ACCOUNTS = Accounts({
    "A": Usage(1, 10.0, 10.0, 1000.0, 5000.0, 1e5),
    "B": Usage(1, 20.0, 20.0, 4000.0, 1000.0, 9e5),
    "C": Usage(1, 30.0, 30.0, 1500.0, 3600.0, 2e4),
    "D": Usage(1, 20.0, 20.0, 3000.0, 2000.0, 5e5),
}, {}, [])

# job 0 holds the only node on [0, 100); jobs 1..6 (one node, 10 s each) queue behind it and then
# run one after the other, so their start order is the policy's queue order
QUEUE = [
    dict(submit=0, run=100, limit=100, nodes=1, account="A"),
    dict(submit=1, run=10, limit=10, nodes=1, account="B"),
    dict(submit=2, run=10, limit=10, nodes=1, account="A"),
    dict(submit=3, run=10, limit=10, nodes=1, account="C"),
    dict(submit=4, run=10, limit=10, nodes=1, account="Z"),
    dict(submit=5, run=10, limit=10, nodes=1, account="A"),
    dict(submit=6, run=10, limit=10, nodes=1, account="D"),
]

HAND_ORDERS = {
    # higher average power first: B 200, D 150, Z 125, A 100 (jobs 2, 5 by submit), C 50
    "acct_avg_power": [1, 6, 4, 2, 5, 3],
    # lower average power first
    "acct_low_avg_power": [3, 2, 5, 4, 6, 1],
    # lower EDP first: B 1 000, D 2 000, Z 2 900, C 3 600, A 5 000
    "acct_edp": [1, 6, 4, 3, 2, 5],
    # lower ED²P first: C 2e4, A 1e5, Z 3.8e5, D 5e5, B 9e5
    "acct_ed2p": [3, 2, 5, 4, 6, 1],
    # more points first: A 11, C 7, Z 0; then the negative accounts B, D in submit order
    "acct_fugaku_pts": [2, 5, 3, 4, 1, 6],
}


def test_hand_table_values():
    pts = HAND_ACCOUNTS.points()
    assert pts == pytest.approx({"A": 11.0, "B": -13.0, "C": 7.0, "D": -5.0})
    assert {k: u.avg_power_w for k, u in HAND_ACCOUNTS.accounts.items()} == {"A": 100, "B": 200, "C": 50, "D": 150}


def _order(policy, backfill="none", options=None, accounts=None):
    res = run_engine(QUEUE, 1, policy, backfill, options=options, accounts=accounts)
    starts = {int(r.job_id): int(r.start_time) for r in res.jobs.itertuples()}
    assert starts[0] == 0
    return [j for j in sorted(starts, key=lambda j: starts[j]) if j != 0]


@pytest.mark.parametrize("backfill", BACKFILLS.names())
@pytest.mark.parametrize("policy", INCENTIVE_POLICIES)
def test_incentive_orders_by_hand(policy, backfill):
    assert _order(policy, backfill, accounts=HAND_ACCOUNTS) == HAND_ORDERS[policy]


def test_fugaku_negative_by_points():
    # D (−5) before B (−13) when negative accounts keep their point order
    assert _order("acct_fugaku_pts", options={"fugaku_negative": "points"}, accounts=HAND_ACCOUNTS) == \
        [2, 5, 3, 4, 6, 1]


def test_user_level():
    acc = Accounts({}, {"u1": Usage(1, 10.0, 10.0, 3000.0, 0, 0), "u2": Usage(1, 10.0, 10.0, 1000.0, 0, 0)}, [])
    jobs = [dict(submit=0, run=100, limit=100, nodes=1, user="u1"),
            dict(submit=1, run=10, limit=10, nodes=1, user="u1"),
            dict(submit=2, run=10, limit=10, nodes=1, user="u2")]
    res = run_engine(jobs, 1, "acct_avg_power", options={"acct_level": "user"}, accounts=acc)
    assert list(res.jobs["start_time"]) == [0, 100, 110]  # u1 draws 300 W per node, u2 100: u1 first
    res = run_engine(jobs, 1, "acct_low_avg_power", options={"acct_level": "user"}, accounts=acc)
    assert list(res.jobs["start_time"]) == [0, 110, 100]


def test_incentive_needs_accounts():
    with pytest.raises(ConfigError, match="accounts collected in an earlier run"):
        run_engine(QUEUE, 1, "acct_edp")
    with pytest.raises(ConfigError, match="acct_level"):
        run_engine(QUEUE, 1, "acct_edp", options={"acct_level": "group"}, accounts=HAND_ACCOUNTS)


# ------------------------------------------------------------------ weighted == fcfs / sjf / ljf
def random_jobs(n, nodes, seed):
    """Many ties on purpose: few distinct submit times, sizes and limits."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(0, n * 20, n) // 50 * 50)
    jobs = []
    for i in range(n):
        limit = int(rng.choice([60, 300, 600, 1800, 3600]))
        run = int(max(0, min(limit * 1.2, rng.exponential(limit / 2))))
        jobs.append(dict(submit=int(submit[i]), run=run, limit=limit, nodes=int(rng.choice([1, 2, 4, 8, nodes])),
                         user=f"u{rng.integers(0, 5)}", account=f"a{rng.integers(0, 3)}"))
    return jobs


ONE_HOT = {"fcfs": "w_age", "sjf": "w_tlimit", "ljf": "w_size"}


@pytest.mark.parametrize("backfill", BACKFILLS.names())
@pytest.mark.parametrize("named", sorted(ONE_HOT))
@pytest.mark.parametrize("seed", [1, 2])
def test_weighted_one_hot_equals_named(named, backfill, seed):
    jobs = random_jobs(300, 16, seed)
    base = run_engine(jobs, 16, named, backfill)
    opts = {w: 0.0 for w in ("w_age", "w_size", "w_tlimit", "w_fairshare")}
    opts[ONE_HOT[named]] = 1.0
    got = run_engine(jobs, 16, "weighted", backfill, options=opts)
    assert schedule_of(got.jobs) == schedule_of(base.jobs)
    # any positive weight is the same order
    opts[ONE_HOT[named]] = 3.7
    assert schedule_of(run_engine(jobs, 16, "weighted", backfill, options=opts).jobs) == schedule_of(base.jobs)


def test_weighted_one_hot_on_a_real_trace(load_cached):
    from twinsweep.core.run import simulate

    wl = load_cached("pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz")
    for named, w in ONE_HOT.items():
        for backfill in ("easy", "conservative"):
            common = dict(data="pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz", backfill=backfill, start=86400 * 30,
                          duration=86400 * 3)
            a = simulate(RunConfig(policy=named, **common), workload=wl)
            b = simulate(RunConfig(policy="weighted", options=((w, 1.0),), **common), workload=wl)
            assert a.jobs["start_time"].equals(b.jobs["start_time"]), (named, backfill)


@pytest.mark.parametrize("factor, policy, sign", [
    ("w_acct_power", "acct_avg_power", 1.0), ("w_acct_power", "acct_low_avg_power", -1.0),
    ("w_acct_edp", "acct_edp", 1.0),
])
def test_weighted_account_factor_equals_incentive_policy(factor, policy, sign):
    jobs = random_jobs(200, 16, 3)
    acc = Accounts({"a0": Usage(1, 10.0, 10.0, 1000.0, 5e3, 1), "a1": Usage(1, 10.0, 10.0, 3000.0, 1e3, 1),
                    "a2": Usage(1, 10.0, 10.0, 2000.0, 9e3, 1)}, {}, [])
    base = run_engine(jobs, 16, policy, "easy", accounts=acc)
    got = run_engine(jobs, 16, "weighted", "easy", options={factor: sign}, accounts=acc)
    assert schedule_of(got.jobs) == schedule_of(base.jobs)


def test_weighted_points_equals_fugaku_by_points():
    jobs = random_jobs(200, 16, 4)
    acc = Accounts({"a0": Usage(1, 10.0, 10.0, 1000.0, 0, 0), "a1": Usage(1, 10.0, 10.0, 3000.0, 0, 0),
                    "a2": Usage(1, 10.0, 10.0, 2500.0, 0, 0)}, {}, [])
    base = run_engine(jobs, 16, "acct_fugaku_pts", "firstfit", options={"fugaku_negative": "points"}, accounts=acc)
    got = run_engine(jobs, 16, "weighted", "firstfit", options={"w_acct_points": 1.0}, accounts=acc)
    assert schedule_of(got.jobs) == schedule_of(base.jobs)


def test_weighted_mixed_by_hand():
    """Two queued jobs behind a blocker: job 1 is older (submit 0 vs 50), job 2 is larger (4 vs 1 nodes
    of 4). age_norm 100 s, size_norm 4: scores at any time differ by w_age·0.5 − w_size·0.75."""
    jobs = [dict(submit=0, run=100, limit=100, nodes=4),
            dict(submit=0, run=10, limit=10, nodes=1),
            dict(submit=50, run=10, limit=10, nodes=4)]
    older = {"w_age": 1.0, "w_size": 0.6, "age_norm_s": 100}   # 0.5 > 0.45: job 1 first
    larger = {"w_age": 1.0, "w_size": 0.7, "age_norm_s": 100}  # 0.5 < 0.525: job 2 first
    assert list(run_engine(jobs, 4, "weighted", options=older).jobs["start_time"]) == [0, 100, 110]
    assert list(run_engine(jobs, 4, "weighted", options=larger).jobs["start_time"]) == [0, 110, 100]
    # all weights 0: every key ties, fcfs order
    assert list(run_engine(jobs, 4, "weighted", options={}).jobs["start_time"]) == [0, 100, 110]


def test_weighted_default_normalisers_by_hand():
    """The weighted policy's factors with their default normalisers (core/policies/weighted.py; DESIGN
    §3.6 names the policy but not its features' normalisation, so the reference scheduler cannot
    cover it): size / system nodes (8 here, larger than any request), 1 − limit / the largest
    limit (400 s), (first submit − submit) / age_norm_s (7 d). Jobs: (submit, nodes, limit) =
    (0, 2, 100), (10, 4, 400), (20, 1, 50); w_size 1, w_tlimit 2, w_age 604.8 (so age is −submit/1000):
    scores 2/8 + 2·0.75 + 0 = 1.75, 4/8 + 0 − 0.01 = 0.49, 1/8 + 2·0.875 − 0.02 = 1.855; key = −score."""
    view = JobView(submit=[0, 10, 20], nodes=[2, 4, 1], time_limit=[100, 400, 50], trace_index=[0, 1, 2],
                   priority=[np.nan] * 3, user=["u"] * 3, account=["a"] * 3)
    pol = Weighted(view, {"w_size": 1.0, "w_tlimit": 2.0, "w_age": 604.8}, SchedulerContext(system_nodes=8))
    assert [pol.key(j) for j in range(3)] == pytest.approx([-1.75, -0.49, -1.855])
    # explicit normalisers replace the defaults: size / 2, 1 − limit / 800
    pol = Weighted(view, {"w_size": 1.0, "w_tlimit": 2.0, "size_norm": 2, "tlimit_norm_s": 800},
                   SchedulerContext(system_nodes=8))
    assert [pol.key(j) for j in range(3)] == pytest.approx([-(1 + 2 * 0.875), -(2 + 2 * 0.5), -(0.5 + 2 * 0.9375)])


def test_fairshare_queue_is_rekeyed_at_every_pass():
    """3 nodes, w_fairshare only. u1's 1-node job runs [0, 100), u2's 2-node job [0, 20). u1's and u2's
    3-node jobs are submitted at 5 and 6: then u2 has used twice u1's node-seconds, F(u1) = 2^(-(1/3)/0.5)
    > F(u2): u1's first. When both can start, at 100, u1 has used 100 node-s and u2 40: F(u1) =
    2^(-(100/140)/0.5) = 0.37 < F(u2) = 2^(-(40/140)/0.5) = 0.67, so u2's job starts first — only
    if the queue is sorted again at that pass (fcfs runs u1's first)."""
    jobs = [dict(submit=0, run=100, limit=100, nodes=1, user="u1"),
            dict(submit=0, run=20, limit=20, nodes=2, user="u2"),
            dict(submit=5, run=10, limit=10, nodes=3, user="u1"),
            dict(submit=6, run=10, limit=10, nodes=3, user="u2")]
    assert list(run_engine(jobs, 3, "fcfs").jobs["start_time"]) == [0, 0, 100, 110]
    fs = run_engine(jobs, 3, "weighted", "none", options={"w_fairshare": 1.0})
    assert list(fs.jobs["start_time"]) == [0, 0, 110, 100]


def test_weighted_static_unless_fairshare():
    view = JobView(submit=[0, 1], nodes=[1, 2], time_limit=[10, 20], trace_index=[0, 1], priority=[np.nan] * 2,
                   user=["u1", "u2"], account=["a", "a"])
    assert Weighted(view, {"w_age": 1.0, "w_size": 2.0}).dynamic is False
    assert Weighted(view, {"w_fairshare": 1.0}).dynamic is True


# ------------------------------------------------------------------ fair share
class _FakeCluster:
    def __init__(self, running):
        self.running = running


def test_fairshare_factor_by_hand():
    """Two users, equal shares S = 1/2. u1 runs a 2-node job on [0, 100): at t=100 U(u1) = 1,
    F(u1) = 2^(−1/0.5) = 0.25, F(u2) = 1 (no usage). With history (u2: 200 node·s from accounts),
    at t=100: U(u1) = 200/400 = 0.5 → F = 2^(−1) = 0.5; U(u2) = 0.5 → F = 0.5."""
    view = JobView(submit=[0, 0], nodes=[2, 1], time_limit=[100, 100], trace_index=[0, 1], priority=[np.nan] * 2,
                   user=["u1", "u2"], account=["a", "a"])
    pol = Weighted(view, {"w_fairshare": 1.0})
    pol.observe(0, _FakeCluster([]))
    pol.on_start([0], 0)
    assert pol.fairshare_factor("u1", 0) == 1.0  # no usage yet
    pol.observe(50, _FakeCluster([(100, 0)]))
    assert pol.fairshare_factor("u1", 50) == pytest.approx(0.25)  # running usage counts
    pol.observe(100, _FakeCluster([]))  # ended at 100
    assert pol.fairshare_factor("u1", 100) == pytest.approx(0.25)
    assert pol.fairshare_factor("u2", 100) == 1.0
    assert pol.key_at(1, 100) < pol.key_at(0, 100)  # u2 first
    hist = Accounts({}, {"u2": Usage(1, 200.0, 100.0, 1.0, 0, 0), "other": Usage(1, 1e6, 1.0, 1.0, 0, 0)}, [])
    pol = Weighted(view, {"w_fairshare": 1.0}, SchedulerContext(system_nodes=2, accounts=hist))
    pol.on_start([0], 0)
    pol.observe(100, _FakeCluster([]))
    assert pol.fairshare_factor("u1", 100) == pytest.approx(0.5)
    assert pol.fairshare_factor("u2", 100) == pytest.approx(0.5)


def test_fairshare_decay_by_hand():
    """Half-life H = 100 s (Slurm's PriorityDecayHalfLife): a node-second used at τ counts
    2^(−(t − τ)/H) at t. u1 runs 2 nodes on [0, 100), u2 1 node from 100. At 150: u1's closed
    usage 2·(H/ln 2)·(1 − 2^−1) = 144.27, decayed by 2^−0.5 to 102.01; u2's running part
    (H/ln 2)·(1 − 2^−0.5) = 42.26. U(u1) = 102.01/144.27 = 0.7071, F = 2^(−0.7071/0.5) = 0.3752;
    U(u2) = 0.2929, F = 0.6660. At 200, once u2's job ended too: u1 72.13, u2 72.13 (equal)."""
    view = JobView(submit=[0, 0], nodes=[2, 1], time_limit=[100, 100], trace_index=[0, 1], priority=[np.nan] * 2,
                   user=["u1", "u2"], account=["a", "a"])
    pol = Weighted(view, {"w_fairshare": 1.0, "fairshare_half_life_s": 100.0})
    pol.on_start([0], 0)
    pol.observe(100, _FakeCluster([]))
    pol.on_start([1], 100)
    pol.observe(150, _FakeCluster([(200, 1)]))
    assert pol.fairshare_factor("u1", 150) == pytest.approx(2 ** (-(2 ** -0.5) / 0.5))
    assert pol.fairshare_factor("u2", 150) == pytest.approx(2 ** (-(1 - 2 ** -0.5) / 0.5))
    pol.observe(200, _FakeCluster([]))
    assert pol.fairshare_factor("u1", 200) == pytest.approx(pol.fairshare_factor("u2", 200)) == pytest.approx(0.5)
    # without a half-life the same usage never fades: u1 200 node-s against u2's 100 at 200
    flat = Weighted(view, {"w_fairshare": 1.0})
    flat.on_start([0], 0)
    flat.observe(100, _FakeCluster([]))
    flat.on_start([1], 100)
    flat.observe(200, _FakeCluster([]))
    assert flat.fairshare_factor("u1", 200) == pytest.approx(2 ** (-(2 / 3) / 0.5))


def test_fairshare_by_account_pools_its_users_and_ignores_held_nodes():
    """fairshare_level = "account": u1 and u2 (account a) share one usage; u3 (account b) has none.
    An availability hold (a running entry past the jobs, index 3) is no one's usage."""
    view = JobView(submit=[0, 0, 0], nodes=[1, 1, 1, 1], time_limit=[100, 100, 100, 50], trace_index=[0, 1, 2],
                   priority=[np.nan] * 3, user=["u1", "u2", "u3"], account=["a", "a", "b"])
    pol = Weighted(view, {"w_fairshare": 1.0, "fairshare_level": "account"})
    pol.on_start([0], 0)
    pol.observe(50, _FakeCluster([(100, 0), (50, 3)]))  # job 0 running, one node held down
    assert pol.fairshare_factor("a", 50) == pytest.approx(2 ** (-1 / 0.5))  # all usage is a's; S = 1/2
    assert pol.fairshare_factor("b", 50) == 1.0
    assert pol.key_at(1, 50) == pol.key_at(0, 50) > pol.key_at(2, 50)  # u2 shares u1's account: both after u3
    with pytest.raises(ConfigError, match="fairshare_level"):
        Weighted(view, {"w_fairshare": 1.0, "fairshare_level": "group"})


def test_fairshare_runs_with_an_availability_calendar():
    """A fair-share policy on a machine with nodes down (formerly refused): 2 nodes, one down on
    [0, 1000). u1's job runs first ([0, 100)); at 100 u1's second job and u2's (submitted later)
    wait for the one free node: fair share starts u2's first (as on the full machine it would not
    matter: both would start at once), and the held node counts for no one."""
    jobs = [dict(submit=0, run=100, limit=100, nodes=1, user="u1"),
            dict(submit=10, run=10, limit=10, nodes=1, user="u1"),
            dict(submit=20, run=10, limit=10, nodes=1, user="u2")]
    win, t0, t1 = select_window(frame(jobs), None, None, False, True)
    system = System(name="t", title="t", nodes=2, availability=((0, 1000, 1),))
    res = Engine(win, system, "weighted", "easy", True, [100.0] * 3, 10.0, t0, t1,
                 options={"w_fairshare": 1.0}).run()
    assert res.jobs["start_time"].tolist() == [0, 110, 100]
    assert res.counts["availability_down_node_s"] == 120  # the free node is held from 0 to the run's end


def test_fairshare_in_the_engine():
    """u1 uses the machine first; at t=100 u1 and u2 each have a job queued (u1's submitted earlier).
    fcfs runs u1's first; fair share runs u2's first, since u1 used 100 node·s and u2 none."""
    jobs = [dict(submit=0, run=100, limit=100, nodes=2, user="u1"),
            dict(submit=10, run=10, limit=10, nodes=2, user="u1"),
            dict(submit=20, run=10, limit=10, nodes=2, user="u2")]
    assert list(run_engine(jobs, 2, "fcfs").jobs["start_time"]) == [0, 100, 110]
    fs = run_engine(jobs, 2, "weighted", "easy", options={"w_fairshare": 1.0, "w_age": 0.01})
    assert list(fs.jobs["start_time"]) == [0, 110, 100]


# ------------------------------------------------------------------ registration, options
def test_registered():
    names = set(available_policies())
    assert set(INCENTIVE_POLICIES) | {"weighted"} <= names
    for p in INCENTIVE_POLICIES + ("weighted",):
        assert RunConfig(data="x", policy=p).policy == p


@pytest.mark.parametrize("module", ["twinsweep.core.run", "twinsweep.core.scheduler", "twinsweep.core.policies", "twinsweep.core", "twinsweep"])
def test_registered_on_import(module):
    code = (f"import {module}\nfrom twinsweep.core.scheduler import available_policies\n"
            "assert 'weighted' in available_policies() and 'acct_fugaku_pts' in available_policies()\n"
            "from twinsweep.core.config import RunConfig; RunConfig(data='x', policy='acct_edp')\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_parse_weights_and_errors():
    assert parse_weights("age=1, size=0.5,w_fairshare=2") == {"w_age": 1.0, "w_size": 0.5, "w_fairshare": 2.0}
    with pytest.raises(ConfigError, match="unknown factor 'speed'"):
        parse_weights("speed=1")
    with pytest.raises(ConfigError, match="not a number"):
        parse_weights("age=x")
    with pytest.raises(ConfigError, match="unknown option 'w_speed'.*valid options: .*w_age"):
        run_engine(QUEUE, 1, "weighted", options={"w_speed": 1.0})
    with pytest.raises(ConfigError, match="accounts"):
        run_engine(QUEUE, 1, "weighted", options={"w_acct_edp": 1.0})
    with pytest.raises(ConfigError, match="age_norm_s must be > 0"):
        run_engine(QUEUE, 1, "weighted", options={"w_age": 1.0, "age_norm_s": 0})


def test_cli_weights(tmp_path):
    from twinsweep.sweep.cli import main

    trace = tmp_path / "t.swf"
    trace.write_text("; MaxNodes: 4\n" + "".join(
        f"{i} {i * 10} 0 {100 - i} {1 + i % 4} -1 -1 {1 + i % 4} {200 - i} -1 1 {i % 3} {i % 2} -1 -1 -1 -1 -1\n"
        for i in range(1, 20)))
    out_w, out_l = tmp_path / "w", tmp_path / "l"
    assert main(["run", "--data", str(trace), "--policy", "weighted", "--weights", "size=1", "--backfill", "easy",
                 "--out", str(out_w), "--quiet"]) == 0
    assert main(["run", "--data", str(trace), "--policy", "ljf", "--backfill", "easy", "--out", str(out_l),
                 "--quiet"]) == 0
    import pandas as pd

    a = pd.read_parquet(out_w / "jobs.parquet")["start_time"]
    b = pd.read_parquet(out_l / "jobs.parquet")["start_time"]
    assert a.equals(b)
    assert main(["run", "--data", str(trace), "--policy", "weighted", "--weights", "bogus=1", "--out",
                 str(tmp_path / "x"), "--quiet"]) == 2


def test_a_randomising_policy_draws_from_the_runs_seed(tmp_path):
    """SchedulerContext.seed is the run's seed: a policy ordering the queue at random from it gives
    one schedule per seed (byte-identical jobs for the same seed) and other orders for other
    seeds, with no perturbation at all."""
    import numpy as np

    from twin_helpers import write_swf_rows
    from twinsweep.core import RunConfig, simulate
    from twinsweep.core.policies import POLICIES, Policy

    class SeededRandom(Policy):
        """Random order drawn from the run's seed (a test plug-in)."""

        def __init__(self, jobs, options=None, context=None):
            super().__init__(jobs, options, context)
            self.draw = np.random.default_rng(self.context.seed).random(len(jobs.submit))

        def key(self, job):
            return float(self.draw[job])

    POLICIES.register("seeded-random-test", SeededRandom)
    try:
        # 12 one-node jobs queued behind a 4-node job on a 4-node machine: the order they start in is the policy's
        rows = [(1, 0, 0, 100, 4)] + [(j, 1, 0, 10, 4) for j in range(2, 14)]
        log = write_swf_rows(tmp_path / "q.swf", rows, max_nodes=4)

        def order(seed):
            jobs = simulate(RunConfig(data=str(log), policy="seeded-random-test", backfill="none", seed=seed)).jobs
            return jobs.sort_values(["start_time", "trace_index"])["job_id"].tolist(), jobs

        o0, j0 = order(0)
        assert o0 == order(0)[0] and order(0)[1].equals(j0)
        assert len({tuple(order(s)[0]) for s in range(4)}) > 1
    finally:
        POLICIES.unregister("seeded-random-test")


def test_options_that_make_a_plugin_a_simpler_one_are_said_by_the_run(tmp_path):
    """weighted with every weight 0, queue_class without an order, windows without a rule: each run
    says in its warnings that it schedules as fcfs / its inner variant (a study would otherwise rank
    two names of one scheduler); with a weight, an order or a rule, nothing is said."""
    from twin_helpers import write_swf_rows
    from twinsweep.core import RunConfig, simulate

    log = write_swf_rows(tmp_path / "q.swf", [(1, 0, 0, 100, 4), (2, 1, 0, 10, 2), (3, 2, 0, 10, 1)], max_nodes=4)

    def said(policy, backfill="easy", **options):
        w = simulate(RunConfig(data=str(log), policy=policy, backfill=backfill,
                               options=tuple(sorted(options.items())))).manifest.get("warnings", [])
        return [x for x in w if "as fcfs" in x or "is its inner variant" in x]

    assert said("weighted") == ["policy 'weighted' with every weight 0 (no w_* option or weights given) gives every "
                                "job the same priority: the queue is in submit order, as fcfs"]
    assert said("weighted", w_size=1.0) == [] and said("weighted", weights="age=1") == []
    assert len(said("queue_class")) == 1 and said("queue_class", order="2 1") == []
    assert said("fcfs", "windows") == ["backfill 'windows' without a sync or caps rule is its inner variant 'easy' (the "
                                       "site's rules are in its system file's [site] table, docs/validation.md)"]
    assert said("fcfs", "windows", caps="mon-fri 07:00-16:00 4:00") == [] and said("fcfs") == []
