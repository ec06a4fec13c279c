"""Accounts (core/accounts.py): arithmetic against hand-computed values, Fugaku points worked by
hand, accounts.json round trip, merge, invalid files, and the run/CLI plumbing."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from twinsweep.core.accounts import (
    KIND, SCHEMA_VERSION, Accounts, Usage, fugaku_points, from_jobs, load_accounts, merge, save_accounts,
)
from twinsweep.core.config import RunConfig
from twinsweep.core.engine import Engine, select_window
from twinsweep.core.errors import ConfigError
from twinsweep.core.system import System
from twin_helpers import write_swf_rows
from twin_helpers import frame


def run_tiny(jobs, powers, nodes=10, duration=None, policy="fcfs", backfill="none", options=None):
    """Engine run of a hand-made trace with a given DC power per node for each job."""
    f = frame(jobs)
    system = System(name="tiny", title="tiny", nodes=nodes)
    win, t0, t1 = select_window(f, None, duration, policy == "replay", True)
    return Engine(win, system, policy, backfill, True, powers, 10.0, t0, t1, options=options).run()


# Four jobs that all start at t=0 on 10 nodes (2+1+4+1 nodes), a fifth still running at the end.
HAND_JOBS = [
    dict(submit=0, run=100, limit=200, nodes=2, account="A", user="u1"),   # E = 100 W·2·100 s = 20 000 J
    dict(submit=0, run=50, limit=100, nodes=1, account="A", user="u2"),    # E = 200·1·50 = 10 000 J
    dict(submit=0, run=10, limit=100, nodes=4, account="B", user="u2"),    # E = 50·4·10 = 2 000 J
    dict(submit=0, run=300, limit=100, nodes=1, account="B", user="u1"),   # killed at 100 s: E = 100·1·100 = 10 000 J
    dict(submit=0, run=1000, limit=2000, nodes=2, account="C", user="u3"),  # still running at t=200: not counted
]
HAND_POWERS = [100.0, 200.0, 50.0, 100.0, 300.0]


@pytest.fixture(scope="module")
def hand():
    res = run_tiny(HAND_JOBS, HAND_POWERS, nodes=10, duration=200)
    assert list(res.jobs["status"]) == ["completed", "completed", "completed", "timeout", "running"]
    return res.jobs


def test_account_sums_by_hand(hand):
    acc = from_jobs(hand)
    assert set(acc.accounts) == {"A", "B"}  # C never finished in the window
    a, b = acc.accounts["A"], acc.accounts["B"]
    assert a == Usage(jobs=2, node_seconds=250.0, run_seconds=150.0, energy_j=30000.0,
                      edp_js=20000 * 100 + 10000 * 50, ed2p_js2=20000 * 100**2 + 10000 * 50**2)
    # the timeout counts with the time it held its node (100 s), not its recorded run time
    assert b == Usage(jobs=2, node_seconds=4 * 10 + 1 * 100, run_seconds=110.0, energy_j=12000.0,
                      edp_js=2000 * 10 + 10000 * 100, ed2p_js2=2000 * 10**2 + 10000 * 100**2)
    assert a.avg_power_w == pytest.approx(120.0)            # 30 000 J / 250 node·s
    assert b.avg_power_w == pytest.approx(12000 / 140)      # 85.714… W per node
    u1, u2 = acc.users["u1"], acc.users["u2"]
    assert (u1.jobs, u1.node_seconds, u1.energy_j) == (2, 300.0, 30000.0)
    assert (u2.jobs, u2.node_seconds, u2.energy_j) == (2, 90.0, 12000.0)


def test_fugaku_points_worked_by_hand(hand):
    """Ē = (30 000 + 12 000)/2 = 21 000 J; P̄ = (120 + 600/7)/2 = 720/7 W per node;
    points_A = (21 000 − 30 000)/(720/7) = −87.5 node·s, points_B = +87.5 node·s.
    Users: Ē = 21 000, P̄ = (100 + 400/3)/2 = 350/3; u1: −9 000·3/350 = −77.142857…, u2: +77.142857…"""
    acc = from_jobs(hand)
    pts = acc.points("account")
    assert pts["A"] == pytest.approx(-87.5)
    assert pts["B"] == pytest.approx(87.5)
    upts = acc.points("user")
    assert upts["u1"] == pytest.approx(-9000 * 3 / 350)
    assert upts["u2"] == pytest.approx(9000 * 3 / 350)
    doc = acc.to_dict()
    assert doc["accounts"]["A"]["fugaku_points"] == pytest.approx(-87.5)
    assert doc["accounts"]["B"]["avg_power_w"] == pytest.approx(600 / 7)


def test_fugaku_points_three_accounts_by_hand():
    """A: 1 000 J over 10 node·s (100 W), B: 4 000 J / 20 (200 W), C: 1 500 J / 30 (50 W).
    Ē = 6 500/3 J, P̄ = 350/3 W: A = (6 500/3 − 1 000)·3/350 = 10, B = −110/7, C = 40/7."""
    tab = {"A": Usage(1, 10, 10, 1000, 0, 0), "B": Usage(1, 20, 20, 4000, 0, 0), "C": Usage(1, 30, 30, 1500, 0, 0)}
    pts = fugaku_points(tab)
    assert pts["A"] == pytest.approx(10.0)
    assert pts["B"] == pytest.approx(-110 / 7)
    assert pts["C"] == pytest.approx(40 / 7)
    assert math.fsum(pts.values()) == pytest.approx(0.0, abs=1e-9)  # deviations from the mean sum to 0
    # no energy anywhere: undefined, not a division by zero
    assert fugaku_points({"A": Usage(1, 10, 10, 0, 0, 0)}) == {"A": None}
    assert fugaku_points({}) == {}


def test_completed_only(hand):
    acc = from_jobs(hand, statuses=("completed",))
    assert acc.accounts["B"].jobs == 1
    assert acc.accounts["B"].energy_j == 2000.0
    assert acc.counted_statuses == ("completed",)


def test_round_trip(tmp_path, hand):
    acc = from_jobs(hand, {"run_key": "k1", "policy": "fcfs"})
    p = save_accounts(acc, tmp_path / "accounts.json")
    doc = json.loads(p.read_text())
    assert doc["kind"] == KIND and doc["schema_version"] == SCHEMA_VERSION
    back = load_accounts(p)
    assert back.accounts == acc.accounts and back.users == acc.users
    assert back.runs == acc.runs and back.counted_statuses == acc.counted_statuses
    assert back.to_dict() == acc.to_dict()
    assert back.checksum() == acc.checksum()
    # a directory holding accounts.json loads too
    assert load_accounts(tmp_path).accounts == acc.accounts
    # derived values in the file are ignored (recomputed from the sums)
    doc["accounts"]["A"]["fugaku_points"] = 1e9
    doc["accounts"]["A"]["avg_power_w"] = -1
    (tmp_path / "edited.json").write_text(json.dumps(doc))
    assert load_accounts(tmp_path / "edited.json").points()["A"] == pytest.approx(-87.5)


def test_merge(hand):
    a = from_jobs(hand, {"run_key": "run-1"})
    b = from_jobs(hand, {"run_key": "run-2"})
    m = merge(a, b)
    assert m.accounts["A"] == Usage(4, 500.0, 300.0, 60000.0, 2 * a.accounts["A"].edp_js, 2 * a.accounts["A"].ed2p_js2)
    assert [r["run_key"] for r in m.runs] == ["run-1", "run-2"]
    # points follow the merged sums: doubling every account leaves averages' ratios, doubles points
    assert m.points()["A"] == pytest.approx(-175.0)
    # disjoint entries are kept; inputs are not modified
    c = Accounts({"Z": Usage(1, 10.0, 10.0, 100.0, 1000.0, 10000.0)}, {}, [{"run_key": "run-3"}])
    m2 = merge(m, c)
    assert set(m2.accounts) == {"A", "B", "Z"}
    assert a.accounts["A"].jobs == 2
    with pytest.raises(ConfigError, match="count them twice"):
        merge(a, from_jobs(hand, {"run_key": "run-1"}))
    with pytest.raises(ConfigError, match="different job statuses"):
        merge(a, from_jobs(hand, {"run_key": "x"}, statuses=("completed",)))


@pytest.mark.parametrize("content, match", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "not an accounts file"),
    (json.dumps({"schema_version": 1, "counts": {}, "system": {}}), "looks like a stats.json"),
    (json.dumps({"kind": KIND, "schema_version": 99, "accounts": {}, "users": {}}), "schema_version 99"),
    (json.dumps({"kind": KIND, "schema_version": 1, "users": {}}), "missing or invalid 'accounts'"),
    (json.dumps({"kind": KIND, "schema_version": 1, "accounts": {"A": {"jobs": 1}}, "users": {}}), "missing"),
    (json.dumps({"kind": KIND, "schema_version": 1, "users": {},
                 "accounts": {"A": {"jobs": 1, "node_seconds": -5, "run_seconds": 1, "energy_j": 1,
                                    "edp_js": 1, "ed2p_js2": 1}}}), r"node_seconds: expected a finite number >= 0"),
    (json.dumps({"kind": KIND, "schema_version": 1, "users": {},
                 "accounts": {"A": {"jobs": 1.5, "node_seconds": 5, "run_seconds": 1, "energy_j": 1,
                                    "edp_js": 1, "ed2p_js2": 1}}}), "expected an integer"),
])
def test_invalid_files(tmp_path, content, match):
    p = tmp_path / "bad.json"
    p.write_text(content)
    with pytest.raises(ConfigError, match=match) as ei:
        load_accounts(p)
    assert str(p) in str(ei.value)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_accounts(tmp_path / "nope.json")
    with pytest.raises(ConfigError, match="no accounts.json or jobs.parquet"):
        load_accounts(tmp_path)


# ------------------------------------------------------------------ run + CLI plumbing
def _trace(tmp_path):
    """A small SWF trace with users and groups (field 12 user, 13 group)."""
    rows = [  # job submit wait run procs user group
        (1, 0, 0, 500, 4, 4, 1000), (2, 10, 0, 300, 4, 5, 1001), (3, 20, 0, 100, 2, 6, 1000),
        (4, 30, 0, 200, 8, 7, 1002), (5, 40, 0, 50, 1, 5, 1001), (6, 50, 0, 400, 2, 4, 1000),
        (7, 60, 0, 100, 4, 6, 1002), (8, 70, 0, 250, 2, 7, 1001),
    ]
    return write_swf_rows(tmp_path / "tiny.swf", rows)


# the tiny trace's recorded schedule holds more than its 8 nodes (replay's warning is tested in test_run_outputs)
@pytest.mark.filterwarnings("ignore::twinsweep.core.run.ReplayOversubscribedWarning")
def test_simulate_with_accounts(tmp_path):
    from twinsweep.core.accounts import accounts_of_run
    from twinsweep.core.run import simulate

    trace = _trace(tmp_path)
    col = simulate(RunConfig(data=str(trace), policy="replay"))
    acc = accounts_of_run(col)
    assert set(acc.accounts) == {"1000", "1001", "1002"}
    assert acc.runs[0]["run_key"] == col.manifest["run_key"]
    path = save_accounts(acc, tmp_path / "acc.json")
    res = simulate(RunConfig(data=str(trace), policy="acct_fugaku_pts", backfill="firstfit",
                             options=(("accounts_in", str(path)),)))
    assert res.manifest["accounts"]["in"] == str(path)
    assert res.manifest["accounts"]["checksum"] == acc.checksum()
    assert res.stats["counts"]["completed"] == 8
    # collect:replay gives the same accounts as the explicit collection run
    res2 = simulate(RunConfig(data=str(trace), policy="acct_fugaku_pts", backfill="firstfit",
                              options=(("accounts_in", "collect:replay"),)))
    assert res2.manifest["accounts"]["checksum"] == acc.checksum()
    pd.testing.assert_frame_equal(res.jobs, res2.jobs)
    # the collection run is keyed as that replay itself is (trace, config and system checksum)
    assert res2.manifest["accounts"]["collect_run_key"] == col.manifest["run_key"]
    # a file from another trace (no common account) is refused
    other = Accounts({"zzz": Usage(1, 1.0, 1.0, 1.0, 1.0, 1.0)}, {}, [])
    save_accounts(other, tmp_path / "other.json")
    with pytest.raises(ConfigError, match="shares no account"):
        simulate(RunConfig(data=str(trace), policy="acct_edp", options=(("accounts_in", str(tmp_path / "other.json")),)))
    with pytest.raises(ConfigError, match="needs a window start and duration"):
        simulate(RunConfig(data=str(trace), policy="acct_edp", options=(("accounts_in", "collect:replay:prev"),)))
    with pytest.raises(ConfigError, match="accounts collected in an earlier run"):
        simulate(RunConfig(data=str(trace), policy="acct_edp"))


@pytest.mark.filterwarnings("ignore::twinsweep.core.run.ReplayOversubscribedWarning")  # as above
# every job of the tiny trace draws the same power per node: the table orders nothing (said, and expected here)
@pytest.mark.filterwarnings("ignore::twinsweep.core.policies.incentives.AccountCoverageWarning")
def test_cli_accounts_out_and_merge(tmp_path):
    from twinsweep.sweep.cli import main

    trace = _trace(tmp_path)
    a1, a2 = tmp_path / "a1.json", tmp_path / "a2.json"
    assert main(["run", "--data", str(trace), "--policy", "replay", "--out", str(tmp_path / "r1"),
                 "--accounts-out", str(a1), "--quiet"]) == 0
    assert main(["run", "--data", str(trace), "--policy", "acct_avg_power", "--backfill", "easy",
                 "--out", str(tmp_path / "r2"), "--accounts-in", str(a1), "--accounts-out", str(a2),
                 "--accounts-merge", "--quiet"]) == 0
    one, two = load_accounts(a1), load_accounts(a2)
    assert len(two.runs) == 2
    for k, u in one.accounts.items():
        assert two.accounts[k].jobs == 2 * u.jobs
        assert two.accounts[k].node_seconds == pytest.approx(2 * u.node_seconds)
    # the run directory itself works as --accounts-in (accounts derived from jobs.parquet)
    assert load_accounts(tmp_path / "r1").accounts == one.accounts
    # a bad accounts file is one clear error line, exit 2
    (tmp_path / "bad.json").write_text("{}")
    assert main(["run", "--data", str(trace), "--policy", "acct_edp", "--out", str(tmp_path / "r3"),
                 "--accounts-in", str(tmp_path / "bad.json"), "--quiet"]) == 2


# ------------------------------------------------------------------ accounts that cannot order a run
def _engine_with_accounts(jobs, policy, accounts, options=None):
    win, t0, t1 = select_window(frame(jobs), None, None, False, True)
    return Engine(win, System(name="tiny", title="tiny", nodes=4), policy, "none", True, [100.0] * len(win), 10.0,
                  t0, t1, options=options, accounts=accounts).run()


@pytest.mark.filterwarnings("ignore::twinsweep.core.run.ReplayOversubscribedWarning")
def test_a_run_records_the_accounts_coverage_warning_in_its_warnings(tmp_path):
    """A RunWarning raised while the engine runs (here the incentive policy's: the tiny trace's
    jobs of accounts 1000-1002 ordered by an accounts table that holds only 1000, whose value is
    then the neutral mean too: every job one value) is in the run's manifest warnings as well as let through, so that a sweep's
    worker does not lose it with its stderr."""
    from twinsweep.core.policies.incentives import AccountCoverageWarning
    from twinsweep.core.run import simulate

    trace = _trace(tmp_path)
    path = save_accounts(Accounts({"1000": Usage(1, 10.0, 10.0, 1e3, 1e4, 1e5)}, {}, []), tmp_path / "other.json")
    with pytest.warns(AccountCoverageWarning, match="cannot order this run's jobs"):
        res = simulate(RunConfig(data=str(trace), policy="acct_edp", options=(("accounts_in", str(path)),)))
    said = [w for w in res.manifest["warnings"] if "cannot order this run's jobs" in w]
    assert len(said) == 1 and "'acct_edp'" in said[0] and "fcfs" in said[0]


def test_incentive_policy_warns_when_the_accounts_cannot_order_the_jobs():
    """acct_level = "account" on a trace without accounts: every job is "unknown", one value for all,
    the run is plain fcfs — said in an AccountCoverageWarning, not silent. Most jobs of users the
    table lacks (neutral value) are said too; a table that orders the jobs says nothing."""
    import warnings as _w

    from twinsweep.core.policies.incentives import AccountCoverageWarning

    users = ["u1", "u2", "u3", "u4"]
    jobs = [dict(submit=i, run=10, limit=20, nodes=4, user=u, account=None) for i, u in enumerate(users)]  # no accounts
    acc = Accounts({"unknown": Usage(4, 400.0, 100.0, 4e4, 1e6, 1e8)},
                   {"u1": Usage(1, 10.0, 10.0, 1e3, 1e4, 1e5), "u2": Usage(1, 10.0, 10.0, 2e3, 2e4, 2e5)}, [])
    with pytest.warns(AccountCoverageWarning, match=r"'acct_edp'.*no account for any job.*acct_level = 'user'.*fcfs"):
        res = _engine_with_accounts(jobs, "acct_edp", acc)
    assert list(res.jobs["start_time"]) == [0, 10, 20, 30]  # fcfs order, as the warning says
    # user level: u1, u2 in the table; u3, u4 not (2 of 4 jobs: not more than half) -> ordered, no warning
    with _w.catch_warnings():
        _w.simplefilter("error", AccountCoverageWarning)
        res = _engine_with_accounts(jobs, "acct_edp", acc, {"acct_level": "user"})
    # EDP u1 1e4, u2 2e4, u3 and u4 the neutral mean 1.5e4: u1 runs alone at 0, then u3, u4 (ties in
    # submit order), then u2 — one 4-node machine, 10 s each
    assert list(res.jobs["start_time"]) == [0, 30, 10, 20]
    # 3 of 4 jobs without an entry: said
    acc1 = Accounts({}, {"u1": Usage(1, 10.0, 10.0, 1e3, 1e4, 1e5), "u9": Usage(1, 10.0, 10.0, 5e3, 5e4, 5e5)}, [])
    with pytest.warns(AccountCoverageWarning, match=r"3 of 4 jobs \(3 users, e.g. \['u2', 'u3', 'u4'\]\) have no "
                                                    r"entry.*neutral edp_js 30000"):
        _engine_with_accounts(jobs, "acct_edp", acc1, {"acct_level": "user"})
