"""Site queue rules as documented options (issue 15): the ``windows`` backfill (clock rules),
the ``queue_class`` policy, a system file's ``[site]`` table read by validate, and replay of a
log that uses more nodes than the machine (``replay_oversubscribe``). Hand-made logs whose
schedule is computed by hand."""

from __future__ import annotations

import warnings

import pytest

from twin_helpers import frame, write_swf_rows
from twinsweep.core import RunConfig, simulate
from twinsweep.core.backfill.windows import ClockRules, WindowsOptions, parse_caps, parse_sync
from twinsweep.core.engine import Engine, select_window
from twinsweep.core.errors import ConfigError
from twinsweep.core.options import parse_options
from twinsweep.core.run import ReplayOversubscribedWarning
from twinsweep.core.system import System, load_system
from twinsweep.sweep.validate import class_workload, site_scheduler, validate

MONDAY = 4 * 86400  # 1970-01-05 00:00, a Monday: clock_offset_s that makes trace time 0 a Monday midnight
H = 3600


def _engine(jobs, nodes, policy="fcfs", backfill="easy", options=None, partition=None, cycle=0):
    f = frame(jobs)
    if partition is not None:
        f["partition"] = partition
    system = System(name="tiny", title="tiny", nodes=nodes, scheduling_cycle_s=cycle)
    win, t0, t1 = select_window(f, None, None, policy == "replay", True, None)
    res = Engine(win, system, policy, backfill, True, [100.0] * len(win), 10.0, t0, t1, options=options).run()
    return res.jobs["start_time"].astype("Int64").tolist(), res


def test_clock_rules_by_hand():
    assert parse_sync("mon-fri 07:00 16:00") == tuple(sorted(d * 86400 + h * H for d in range(5) for h in (7, 16)))
    assert parse_sync("sun 23:30; mon 00:00") == (0, 6 * 86400 + 23 * H + 1800)
    assert parse_caps("sat,sun 00:00-24:00 60:00") == ((5 * 86400, 6 * 86400, 60 * H), (6 * 86400, 7 * 86400, 60 * H))
    r = ClockRules(WindowsOptions(sync="mon-fri 07:00 16:00", caps="mon-fri 07:00-16:00 4:00", clock_offset_s=MONDAY,
                                  sync_until="1970-01-12"))
    assert r.allowed(7 * H, 0) and not r.allowed(7 * H + 1, 0)  # Mon 00:00: may end exactly at 07:00
    assert not r.allowed(4 * H + 1, 8 * H) and r.allowed(4 * H, 8 * H)  # the 4 h day cap
    assert not r.allowed(4 * H, 13 * H) and r.allowed(3 * H, 13 * H)  # 13:00 + 4 h crosses 16:00
    assert r.allowed(63 * H, 4 * 86400 + 16 * H)  # Fri 16:00 -> Mon 07:00 is 63 h
    assert not r.allowed(63 * H + 1, 4 * 86400 + 16 * H)
    assert r.allowed(100 * H, 7 * 86400)  # the next Monday: sync_until passed, and no day cap at 00:00
    for bad, msg in (({"sync": "mon 25:00"}, "clock time"), ({"sync": "moon 07:00"}, "day"),
                     ({"caps": "mon 10:00-09:00 1:00"}, "end after"), ({"caps": "mon 00:00-10:00 1:00; mon 09:00-11:00 1:00"},
                                                                      "overlap"),
                     ({"sync_until": "June 6"}, "YYYY-MM-DD"), ({"inner": "windows"}, "expected one of")):
        with pytest.raises(ConfigError, match=msg):
            parse_options("backfill", "windows", WindowsOptions, bad)


@pytest.mark.parametrize("inner", ["easy", "conservative", "firstfit"])
def test_windows_holds_jobs_until_the_rules_let_them_start(inner):
    """4 nodes, a synchronization point Monday 07:00: the 8 h job submitted at 00:00 would run
    across it and waits; the 2 h job starts at once; at 07:00 (a submission makes the pass) the
    8 h job starts. With a cap of 3 h until 12:00 it waits until the pass at 12:00."""
    jobs = [dict(submit=0, run=H, limit=8 * H, nodes=1), dict(submit=0, run=2 * H, limit=2 * H, nodes=1),
            dict(submit=7 * H, run=H, limit=H, nodes=1), dict(submit=12 * H, run=H, limit=H, nodes=1)]
    opts = {"inner": inner, "sync": "mon 07:00", "clock_offset_s": MONDAY}
    starts, res = _engine(jobs, 4, backfill="windows", options=opts)
    assert starts == [7 * H, 0, 7 * H, 12 * H]
    assert res.counts["windows_held_passes"] == 2  # the 8 h job, at the passes at 00:00 and 02:00
    starts, _ = _engine(jobs, 4, backfill="windows", options={**opts, "caps": "mon 00:00-12:00 3:00"})
    assert starts == [12 * H, 0, 7 * H, 12 * H]
    # no rule: the inner variant alone
    plain, _ = _engine(jobs, 4, backfill=inner)
    starts, _ = _engine(jobs, 4, backfill="windows", options={"inner": inner})
    assert starts == plain == [0, 0, 7 * H, 12 * H]


_RULE_SETS = [
    dict(sync="mon-fri 07:00 16:00", caps="mon-fri 07:00-16:00 4:00; mon-thu 16:00-24:00 15:00",
         sync_until="1970-01-12", caps_until="1970-01-19"),
    dict(sync="sat,sun 12:00; wed 03:30"),
    dict(caps="mon-sun 01:00-03:00 0:30; fri 03:00-09:00 2:00"),
]


@pytest.mark.parametrize("rules", range(len(_RULE_SETS)))
def test_next_allowed_is_the_first_allowed_minute(rules):
    """ClockRules.next_allowed against an independent minute-by-minute scan of allowed() (every
    rule time is a whole minute, so the first allowed time after now + 1 is one): limits from 30 min to 70 h,
    from times over two and a half weeks; None when the scan finds nothing within 3 weeks and no
    rule ends later (the rules then repeat every week)."""
    r = ClockRules(WindowsOptions(clock_offset_s=MONDAY, **_RULE_SETS[rules]))
    for limit in (1800, 4 * H, 9 * H, 15 * H + 60, 63 * H, 70 * H):
        for now in range(0, 18 * 86400, 17 * 3600 + 420):
            got = r.next_allowed(limit, now)
            scan = next((w for w in [now + 1, *range(now + 60, now + 21 * 86400, 60)] if r.allowed(limit, w)), None)
            assert got == scan, (rules, limit, now)
    # next_allowed keeps its last answer per limit: asked in any order, the same rules answer as a fresh
    # instance does (no answer reused where it does not hold)
    import random

    asks = [(limit, now) for limit in (1800, 4 * H, 63 * H) for now in range(0, 18 * 86400, 5 * 3600 + 60)]
    random.Random(rules).shuffle(asks)
    assert [r.next_allowed(*a) for a in asks] == [
        ClockRules(WindowsOptions(clock_offset_s=MONDAY, **_RULE_SETS[rules])).next_allowed(*a) for a in asks]


def test_windows_wakes_the_engine_at_a_synchronization_point():
    """4 nodes, a synchronization point Monday 07:00 and nothing submitted or ending then: the
    8 h job submitted at 05:00 would run across 07:00, waits, and starts at 07:00 itself (the
    variant's next_wake) instead of at the next event (the submission at 10:00); with a cap of
    3 h until 12:00 it starts at 12:00; with a scheduling cycle of 1,000 s at the first
    multiple after 07:00 (26,000 s). A held job wider than the free nodes wakes nothing: with a
    1 h cap from 01:00 to 06:00, a 4-node 3 h job held at 05:00 while a 1-node job runs from
    00:00 to 09:00 starts at that end, and the engine has no step at 06:00 (no pass then); a
    3-node job, which fits, starts at 06:00."""
    jobs = [dict(submit=0, run=H, limit=H, nodes=1), dict(submit=5 * H, run=H, limit=8 * H, nodes=1),
            dict(submit=10 * H, run=H, limit=H, nodes=1)]
    opts = {"inner": "easy", "sync": "mon 07:00", "clock_offset_s": MONDAY}
    starts, res = _engine(jobs, 4, backfill="windows", options=opts)
    assert starts == [0, 7 * H, 10 * H]
    assert res.counts["windows_held_passes"] == 1  # at 05:00 only
    starts, _ = _engine(jobs, 4, backfill="windows", options={**opts, "caps": "mon 00:00-12:00 3:00"})
    assert starts == [0, 12 * H, 10 * H]
    starts, _ = _engine(jobs, 4, backfill="windows", options=opts, cycle=1000)
    assert starts == [0, 26000, 10 * H]
    caps = {"inner": "easy", "caps": "mon 01:00-06:00 1:00", "clock_offset_s": MONDAY}
    wide = [dict(submit=0, run=9 * H, limit=10 * H, nodes=1), dict(submit=5 * H, run=H, limit=3 * H, nodes=4)]
    starts, res = _engine(wide, 4, backfill="windows", options=caps)
    assert starts == [0, 9 * H]
    assert res.steps["time"].tolist() == [0, 5 * H, 9 * H, 10 * H]
    wide[1]["nodes"] = 3
    starts, res = _engine(wide, 4, backfill="windows", options=caps)
    assert starts == [0, 6 * H]
    assert res.steps["time"].tolist() == [0, 5 * H, 6 * H, 7 * H, 9 * H]


class _FakeCluster:
    def __init__(self, free):
        self.free_nodes, self.total_nodes, self.running, self.now = free, 4, [], 0


def test_windows_next_wake_by_hand():
    """Direct calls: the held job with the shortest limit that fits in the free nodes decides;
    nothing held, or nothing held that fits, is None."""
    from twinsweep.core.backfill.windows import Windows
    from twinsweep.core.jobview import JobView

    limits, nodes = [8 * H, 12 * H, H, 30 * H], [1, 1, 3, 1]
    view = JobView([0] * 4, nodes, limits, range(4), [0.0] * 4, ["u"] * 4, ["a"] * 4)
    bf = Windows(view, {"sync": "mon-fri 07:00 16:00", "clock_offset_s": MONDAY})
    assert bf.next_wake(5 * H, [0, 1], _FakeCluster(4)) == 7 * H  # 8 h fits 07:00 -> 16:00 (9 h)
    assert bf.next_wake(5 * H, [1], _FakeCluster(4)) == 16 * H  # 12 h: 16:00 -> Tue 07:00 (15 h)
    assert bf.next_wake(5 * H, [3], _FakeCluster(4)) == 4 * 86400 + 16 * H  # 30 h: Friday 16:00 -> Monday 07:00
    assert bf.next_wake(5 * H, [0], _FakeCluster(0)) is None  # does not fit in the free nodes
    assert bf.next_wake(5 * H, [2], _FakeCluster(4)) is None  # 1 h at 05:00 is allowed: nothing held


def test_scheduler_refuses_a_wake_up_not_after_now():
    from twinsweep.core.backfill import BACKFILLS, Backfill

    class Stuck(Backfill):
        def select(self, now, queue, cluster):
            return []

        def next_wake(self, now, queue, cluster):
            return now

    BACKFILLS.register("stuck-wake", Stuck, replace=True)
    try:
        with pytest.raises(RuntimeError, match=r"next_wake returned 0 at 0 s \(expected an integer time > now"):
            _engine([dict(submit=0, run=H, limit=H, nodes=1)], 2, backfill="stuck-wake")
    finally:
        BACKFILLS.unregister("stuck-wake")


def test_queue_class_orders_by_declared_class_then_fcfs():
    """1 node, 100 s jobs: A runs first; then C (class 1, rank 0), B (class 4), then D (no
    class) and E (class 9, not declared) in submit order."""
    jobs = [dict(submit=s, run=100, limit=100, nodes=1) for s in (0, 10, 20, 30, 40)]
    starts, _ = _engine(jobs, 1, policy="queue_class", options={"order": "1, 2 3 4"},
                        partition=["3", "4", "1", None, "9"])
    assert starts == [0, 200, 100, 300, 400]
    starts, _ = _engine(jobs, 1, policy="queue_class", partition=["3", "4", "1", None, "9"])
    assert starts == [0, 100, 200, 300, 400]  # no order: plain FCFS


def _swf(path, rows, max_nodes, queues=None):
    """SWF rows (job, submit, wait, run, procs) with requested time 2 x run and queue codes."""
    lines = [f"; MaxNodes: {max_nodes}", f"; MaxProcs: {max_nodes}"]
    for k, (jid, sub, wait, run, procs) in enumerate(rows):
        q = -1 if queues is None else queues[k]
        lines.append(f"{jid} {sub} {wait} {run} {procs} -1 -1 {procs} {run * 2} -1 1 1 1 -1 {q} -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_replay_oversubscribed_log(tmp_path):
    """A 2-node machine whose log ran 3 nodes on [10, 100): replay delays job 2 to 100 and warns
    (1 period, 90 s, peak 3); with replay_oversubscribe it starts at its recorded 10, busy nodes
    reach 3 (utilisation 1.5 against the nominal 2), and the 3-node job stays rejected."""
    log = _swf(tmp_path / "over.swf", [(1, 0, 0, 100, 2), (2, 10, 0, 100, 1), (3, 300, 0, 10, 3)], 2)
    sysf = tmp_path / "two.toml"
    sysf.write_text('[system]\nname = "two"\nnodes = 2\n')
    cfg = RunConfig(data=str(log), system=str(sysf), policy="replay", backfill="none", sample_period=10)
    with pytest.warns(ReplayOversubscribedWarning, match=r"1 period\(s\) \(90 s, peak 3 nodes\)"):
        r = simulate(cfg)
    assert r.jobs["start_time"].astype("Int64").tolist()[:2] == [0, 100]
    assert r.stats["counts"]["replay_delayed"] == 1 and r.stats["counts"]["replay_oversubscribed_periods"] == 1
    opt = RunConfig(data=str(log), system=str(sysf), policy="replay", backfill="none", sample_period=10,
                    options=(("replay_oversubscribe", True),))
    with pytest.warns(ReplayOversubscribedWarning, match="follows the log"):
        o = simulate(opt)
    j = o.jobs
    assert j["start_time"].astype("Int64").tolist()[:2] == [0, 10]
    assert j["status"].tolist() == ["completed", "completed", "rejected"]
    assert j["reason"].iloc[2] == "asks for 3 nodes; the system has 2"
    c = o.stats["counts"]
    assert c["replay_delayed"] == 0 and c["replay_oversubscribed_s"] == 90 and c["replay_recorded_peak_nodes"] == 3
    assert o.manifest["system"]["nodes"] == 2
    tl = o.timeline
    assert tl["busy_nodes"].max() == 3 and tl["utilization"].max() == pytest.approx(1.5)
    # the phantom node draws no power: IT power at 3 busy nodes = the nominal idle of 2 + one busy node more
    assert len(o.jobs) == 3 and o.jobs["trace_index"].tolist() == [0, 1, 2]
    with pytest.raises(ConfigError, match="applies to policy 'replay' only"):
        simulate(RunConfig(data=str(log), system=str(sysf), policy="fcfs", backfill="easy",
                           options=(("replay_oversubscribe", True),)))
    # a log within the machine: no warning, no new count
    ok = _swf(tmp_path / "ok.swf", [(1, 0, 0, 100, 1), (2, 10, 0, 100, 1)], 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = simulate(RunConfig(data=str(ok), system=str(sysf), policy="replay", backfill="none"))
    assert "replay_oversubscribed_periods" not in r.stats["counts"]


def test_site_table_is_the_validated_scheduler(tmp_path):
    sysf = tmp_path / "site.toml"
    body = '[system]\nname = "site8"\nnodes = 8\n'
    sysf.write_text(body + '[site]\npolicy = "queue_class"\nbackfill = "firstfit"\nclass_field = "queue"\n'
                    '[site.options]\norder = "2 1"\n')
    jobs = [(i + 1, i * 300, 0, 600, 1 + i % 8) for i in range(80)]
    log = _swf(tmp_path / "q.swf", jobs, 8, queues=[1 + i % 2 for i in range(80)])
    site = site_scheduler(load_system(sysf))
    assert site["policy"] == "queue_class" and site["options"] == {"order": "2 1"}
    from twinsweep.core.loaders import load_workload

    wl = class_workload(load_workload(log), "queue")
    assert wl.jobs["partition"].tolist()[:2] == ["1", "2"]
    v = validate(str(log), system=str(sysf), noise_seeds=0, sensitivity=True, windows=0)
    assert (v["policy"], v["backfill"], v["options"]) == ("queue_class", "firstfit", {"order": "2 1"})
    assert v["site"]["from"] == "site.toml [site]" and v["site"]["class_field"] == "queue"
    assert [r for r in v["sensitivity"] if r["site"]] == [r for r in v["sensitivity"] if r["policy"] == "queue_class"]
    assert validate(str(log), system=str(sysf), policy="fcfs", noise_seeds=0, sensitivity=False,
                    windows=0)["site"]["from"] == "given"
    for extra, msg in (('[site]\npolicy = "fcfs"\nqueue = 1\n', "unknown key"),
                       ('[site]\npolicy = "queue_class"\n[site.options]\nrank = "1"\n', "unknown option 'rank'"),
                       ('[site]\nclass_field = "qos"\n', "class_field")):
        sysf.write_text(body + extra)
        with pytest.raises(ConfigError, match=msg):
            site_scheduler(load_system(sysf))


def test_shipped_site_tables_load():
    kth = site_scheduler(load_system("kth-sp2"))
    assert kth["backfill"] == "windows" and kth["options"]["sync"] == "mon-fri 07:00 16:00"
    assert site_scheduler(load_system("sdsc-sp2"))["policy"] == "queue_class"
    ricc = site_scheduler(load_system("ricc"))  # the PWA-documented project fair share
    assert (ricc["policy"], ricc["backfill"]) == ("weighted", "easy")
    assert ricc["options"] == {"w_fairshare": 1.0, "fairshare_level": "account", "fairshare_half_life_s": 604800.0}
    assert site_scheduler(load_system("hpc2n-seth")) == {}  # no described rule: fcfs + easy
