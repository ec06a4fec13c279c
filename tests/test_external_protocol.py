"""External schedulers over the protocol (docs/protocol.md, issue 12 item 3): the shipped
fcfs_easy.py reproduces the built-in fcfs + easy byte for byte over both transports, and every
impossible decision stops the run with one error quoting the reply."""

from __future__ import annotations

import hashlib
import io
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from twin_helpers import frame
from twinsweep.core.config import RunConfig
from twinsweep.core.engine import Engine, select_window
from twinsweep.core.errors import ConfigError, ProtocolError
from twinsweep.core.run import _jobs_table, load_run_inputs, simulate
from twinsweep.core.system import System

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "studies" / "schedulers" / "fcfs_easy.py"
INPROC = f"inproc:{SCRIPT}:FcfsEasy"
PROCESS = f"{sys.executable} {SCRIPT}"


def _digest(res) -> str:
    b = io.BytesIO()
    pq.write_table(_jobs_table(res.jobs), b, compression="zstd")
    return hashlib.sha256(b.getvalue()).hexdigest()


@pytest.mark.parametrize("data,start_d,days,transports", [
    ("pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz", 144, 1, (INPROC, PROCESS)),
    ("pwa-swf/SDSC-SP2-1998-4.2-cln.swf.gz", 200, 1, (INPROC,)),
])
def test_fcfs_easy_script_gives_the_builtin_jobs_parquet(data, start_d, days, transports):
    kw = dict(data=data, start=start_d * 86400, duration=days * 86400)
    base = RunConfig(policy="fcfs", backfill="easy", **kw)
    wl, system = load_run_inputs(base)
    want = _digest(simulate(base, workload=wl, system=system))
    for sched in transports:
        res = simulate(RunConfig(policy="external", scheduler=sched, **kw), workload=wl, system=system)
        assert res.stats["counts"]["external_messages"] > 10
        assert _digest(res) == want, sched


def test_fcfs_easy_script_follows_an_availability_calendar():
    jobs = [{"submit": 0, "run": 100, "limit": 100, "nodes": 2}, {"submit": 5, "run": 50, "limit": 60, "nodes": 4},
            {"submit": 6, "run": 20, "limit": 30, "nodes": 1}, {"submit": 7, "run": 10, "limit": 400, "nodes": 2}]
    system = System(name="tiny", title="tiny", nodes=4, availability=((50, 300, 1),))
    out = []
    for policy, backfill, sched in (("fcfs", "easy", None), ("external", "none", INPROC)):
        win, t0, t1 = select_window(frame(jobs), None, None, False, True)
        res = Engine(win, system, policy, backfill, True, [100.0] * 4, 10.0, t0, t1, scheduler=sched).run()
        out.append(res.jobs[["start_time", "end_time", "status"]].astype(str).values.tolist())
    assert out[0] == out[1]


class _Scripted:
    """An in-process scheduler replying with the given decision lists, one per message."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.messages = []

    def handle(self, msg):
        self.messages.append(msg)
        return self.replies.pop(0) if self.replies else {"events": []}


def _run(replies, jobs=None, nodes=4):
    jobs = jobs or [{"submit": 0, "run": 10, "limit": 20, "nodes": 2}, {"submit": 5, "run": 10, "limit": 20, "nodes": 3}]
    win, t0, t1 = select_window(frame(jobs), None, None, False, True)
    s = _Scripted(replies)
    res = Engine(win, System(name="tiny", title="tiny", nodes=nodes), "external", "none", True,
                 [100.0] * len(win), 10.0, t0, t1, scheduler=s).run()
    return res, s


def _start(j, **data):
    return {"events": [{"type": "EXECUTE_JOB", "data": {"job_id": j, **data}}]}


def test_messages_carry_now_events_and_free_nodes_and_decisions_apply():
    res, s = _run([_start(0, alloc="2-3"), {"events": [{"type": "CALL_ME_LATER", "data": {"timestamp": 8}}]},
                   {"events": []}, {"events": [{"type": "REJECT_JOB", "data": {"job_id": 1, "reason": "too big"}}]}])
    m0 = s.messages[0]
    assert m0["now"] == 0 and m0["free_nodes"] == 4
    assert [e["type"] for e in m0["events"]] == ["SIMULATION_BEGINS", "JOB_SUBMITTED"]
    assert m0["events"][1]["data"]["time_limit"] == 20 and "run_time" not in m0["events"][1]["data"]
    assert [(m["now"], [e["type"] for e in m["events"]]) for m in s.messages[1:]] == [
        (5, ["JOB_SUBMITTED"]), (8, ["REQUESTED_CALL"]), (10, ["JOB_ENDED"]), (10, ["SIMULATION_ENDS"])]
    assert list(res.jobs["node_ids"][0]) == [2, 3]
    assert list(res.jobs["status"]) == ["completed", "rejected"]
    assert res.jobs["reason"][1] == "rejected by the external scheduler: too big"


@pytest.mark.parametrize("reply,match", [
    (_start(1), "job 1 is not queued"),
    (_start(7), "job 7 is not a job of this run"),
    ({"events": [{"type": "EXECUTE_JOB", "data": {"job_id": 0, "alloc": "0"}}]}, "cannot start it on"),
    ({"events": [{"type": "CALL_ME_LATER", "data": {"timestamp": 0}}]}, "after now"),
    ({"now": -5, "events": []}, "never in the past"),
    ({"events": [{"type": "EXECUTE_JOB", "timestamp": 3, "data": {"job_id": 0}}]}, "not now"),
    ({"events": [{"type": "KILL_JOB", "data": {}}]}, "unknown decision type 'KILL_JOB'"),
    ([], "must be a JSON object"),
    ({"event": [{"type": "EXECUTE_JOB", "data": {"job_id": 0}}]}, r"unknown reply key\(s\) \['event'\]"),
])
def test_impossible_decisions_stop_the_run_quoting_the_reply(reply, match):
    with pytest.raises(ProtocolError, match=match) as e:
        _run([reply])
    assert "its reply:" in str(e.value) and "at now = 0" in str(e.value)


def test_too_many_nodes_is_an_error():
    with pytest.raises(ProtocolError, match="job 1 needs 3 nodes; 2 are free"):
        _run([_start(0), _start(1)])


def test_process_transport_errors(tmp_path):
    bad_json = tmp_path / "bad.py"
    bad_json.write_text("import sys\nfor line in sys.stdin:\n    print('not json', flush=True)\n")
    with pytest.raises(ProtocolError, match="is not JSON.*'not json'"):
        _run_cmd(f"{sys.executable} {bad_json}")
    dies = tmp_path / "dies.py"
    dies.write_text("import sys\nsys.stdin.readline()\nprint('boom', file=sys.stderr)\nsys.exit(3)\n")
    with pytest.raises(ProtocolError, match="exited with status 3.*boom"):
        _run_cmd(f"{sys.executable} {dies}")


def test_a_scheduler_that_stops_replying_is_stopped_after_the_reply_timeout(tmp_path):
    from twinsweep.core.external import ProcessTransport

    hangs = tmp_path / "hangs.py"
    hangs.write_text("import sys, time\nsys.stdin.readline()\nprint('thinking', file=sys.stderr, flush=True)\n"
                     "time.sleep(60)\n")
    t = ProcessTransport([sys.executable, str(hangs)], "hangs", reply_timeout=0.5)
    try:
        with pytest.raises(ProtocolError, match=r"'hangs' did not reply to the message at now = 7 within 0.5 s.*thinking"):
            t.exchange({"now": 7, "events": []})
        assert t.proc.wait(timeout=5) is not None  # killed, not left behind
    finally:
        t.close()
    with pytest.raises(ConfigError, match="reply timeout"):
        ProcessTransport([sys.executable, "-c", "pass"], reply_timeout=0)


def test_process_transport_reads_replies_split_across_writes_and_long_messages(tmp_path):
    """Replies arrive in pieces (a slow writer) and a long message (> a pipe buffer) goes through."""
    from twinsweep.core.external import ProcessTransport

    echo = tmp_path / "echo.py"
    echo.write_text("import json, sys, time\nfor line in sys.stdin:\n    m = json.loads(line)\n"
                    "    out = json.dumps({'events': [], 'n': len(m['pad'])})\n"
                    "    sys.stdout.write(out[:5]); sys.stdout.flush(); time.sleep(0.05)\n"
                    "    sys.stdout.write(out[5:] + '\\n'); sys.stdout.flush()\n")
    t = ProcessTransport([sys.executable, str(echo)], "echo", reply_timeout=30)
    try:
        for n in (3, 300_000):
            reply, text = t.exchange({"now": 1, "pad": "x" * n})
            assert reply == {"events": [], "n": n} and text.endswith("\n")
    finally:
        t.close()


def _run_cmd(cmd):
    win, t0, t1 = select_window(frame([{"submit": 0, "run": 10, "limit": 20, "nodes": 2}]), None, None, False, True)
    return Engine(win, System(name="tiny", title="tiny", nodes=4), "external", "none", True, [100.0], 10.0, t0, t1,
                  scheduler=cmd).run()


def test_run_config_and_identity():
    with pytest.raises(ConfigError, match="needs a scheduler"):
        RunConfig(data="x", policy="external")
    assert RunConfig(data="x", policy="fcfs", scheduler="ignored").scheduler is None
    a = RunConfig(data="x", policy="external", scheduler="python a.py")
    b = RunConfig(data="x", policy="external", scheduler="python b.py")
    assert a.key("c") != b.key("c")  # the scheduler command is part of the identity (core.config.run_key hashes key())
    assert "scheduler" not in RunConfig(data="x").to_dict()  # manifests of other runs unchanged
    assert RunConfig.from_dict(a.to_dict()) == a


def test_spec_checks_the_scheduler_command(tmp_path):
    from twinsweep.sweep.spec import parse_spec

    def spec(grid):
        return {"datasets": [{"trace": "pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz"}], "grid": grid}

    with pytest.raises(ConfigError, match="grid.scheduler.*'no-such-program-xyz' is not found"):
        parse_spec(spec({"policy": ["external"], "scheduler": ["no-such-program-xyz --x"]}))
    with pytest.raises(ConfigError, match="no script file"):
        parse_spec(spec({"policy": ["external"], "scheduler": [f"{sys.executable} {tmp_path}/missing.py"]}))
    with pytest.raises(ConfigError, match="needs the command of its scheduler"):
        parse_spec(spec({"policy": ["external"]}))
    with pytest.raises(ConfigError, match="backfill must be 'none'"):
        parse_spec(spec({"policy": ["external"], "backfill": ["easy"], "scheduler": [PROCESS]}))
    s = parse_spec(spec({"policy": ["fcfs", "external"], "scheduler": [PROCESS]}))
    assert dict(s.grid)["scheduler"] == (PROCESS,)


class _Crashes:
    """An in-process scheduler whose own code fails on its second message."""

    def __init__(self):
        self.n = 0

    def handle(self, msg):
        self.n += 1
        if self.n == 2:
            return {"events": []}["missing"]
        return {"events": []}


def test_an_in_process_scheduler_that_raises_is_one_protocol_error_naming_it():
    with pytest.raises(ProtocolError, match=r"external scheduler '_Crashes' raised KeyError: 'missing' "
                                            r"\(raised at \S+/test_external_protocol.py, line \d+\) while handling the message "
                                            r"at now = 5") as e:
        win, t0, t1 = select_window(frame([{"submit": 0, "run": 10, "limit": 20, "nodes": 2},
                                           {"submit": 5, "run": 10, "limit": 20, "nodes": 3}]), None, None, False, True)
        Engine(win, System(name="tiny", title="tiny", nodes=4), "external", "none", True, [100.0] * 2, 10.0, t0, t1,
               scheduler=_Crashes()).run()
    assert isinstance(e.value.__cause__, KeyError)  # the scheduler's own traceback stays reachable from Python


def test_the_reply_timeout_can_be_set_from_the_environment(tmp_path, monkeypatch):
    from twinsweep.core.external import REPLY_TIMEOUT_S, connect

    script = tmp_path / "s.py"
    script.write_text("import sys\nfor line in sys.stdin:\n    pass\n")
    cmd = f"{sys.executable} {script}"
    monkeypatch.delenv("TWINSWEEP_SCHEDULER_TIMEOUT_S", raising=False)
    for env, want in ((None, REPLY_TIMEOUT_S), ("2.5", 2.5)):
        if env is not None:
            monkeypatch.setenv("TWINSWEEP_SCHEDULER_TIMEOUT_S", env)
        t = connect(cmd)
        try:
            assert t.reply_timeout == want
        finally:
            t.close()
    t = connect(cmd, reply_timeout=7)  # an explicit value wins
    assert t.reply_timeout == 7
    t.close()
    for bad in ("0", "-1", "soon", "nan"):
        monkeypatch.setenv("TWINSWEEP_SCHEDULER_TIMEOUT_S", bad)
        with pytest.raises(ConfigError, match="TWINSWEEP_SCHEDULER_TIMEOUT_S"):
            connect(cmd)
