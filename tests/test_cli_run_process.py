"""The `twinsweep run` process itself (issue 14: the whole process's CPU): numpy is loaded with one
OpenBLAS thread for a run unless the user chose a thread count, and the user's environment is what
the run's own child processes see."""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHILD = r"""
import json, os, sys
from twinsweep.sweep.cli import _one_blas_thread, _BLAS_THREAD_VARS
out = {}
_one_blas_thread(["sweep", "study.toml"])                      # not a run: nothing happens
out["other"] = ["numpy" in sys.modules, {v: os.environ.get(v) for v in _BLAS_THREAD_VARS}]
os.environ["OMP_NUM_THREADS"] = "3"                            # the user's choice wins
_one_blas_thread(["run", "--data", "x"])
out["user"] = ["numpy" in sys.modules, {v: os.environ.get(v) for v in _BLAS_THREAD_VARS}]
del os.environ["OMP_NUM_THREADS"]
_one_blas_thread(["run", "--data", "x"])
out["run"] = ["numpy" in sys.modules, {v: os.environ.get(v) for v in _BLAS_THREAD_VARS},
              len(os.listdir("/proc/self/task"))]
print(json.dumps(out))
"""


def test_a_run_loads_numpy_with_one_blas_thread_and_leaves_the_environment_alone():
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                                               "OMP_NUM_THREADS")}
    r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, check=True)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    none = {"OPENBLAS_NUM_THREADS": None, "GOTO_NUM_THREADS": None, "OMP_NUM_THREADS": None}
    assert out["other"] == [False, none]
    assert out["user"] == [False, {**none, "OMP_NUM_THREADS": "3"}]
    # loaded now, with OpenBLAS's pool of one (the main thread: no worker thread started), and the
    # variable gone again, so an external scheduler the run starts inherits the user's environment
    assert out["run"] == [True, none, 1]


def _subcommands(parser):
    import argparse

    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_a_subcommand_built_alone_parses_and_helps_as_in_the_full_parser():
    """`twinsweep run` builds only the run subparser (start-up): that parser is the full one's, in
    its help and in what it parses; any other first word builds them all."""
    from twinsweep.sweep.cli import _OWN_COMMANDS, build_parser

    full = build_parser()
    assert set(_OWN_COMMANDS) < set(_subcommands(full))
    for name in _OWN_COMMANDS:
        alone = build_parser(name)
        assert list(_subcommands(alone)) == [name]
        assert _subcommands(alone)[name].format_help() == _subcommands(full)[name].format_help()
    argv = ["run", "--data", "x.swf", "--policy", "fcfs", "--backfill", "easy", "--out", "o", "--start", "2d",
            "--duration", "90m", "--option", "a=1", "--quiet"]
    assert vars(build_parser("run").parse_args(argv)) == vars(full.parse_args(argv))
    for other in ("sweep", "tune", "--help", "bogus", None):
        assert set(_subcommands(build_parser(other))) == set(_subcommands(full))


def test_start_up_pauses_the_garbage_collector_and_restores_it():
    """The CLI's imports run with the cyclic collector off; it is back on afterwards (also after an
    error), and left off when the caller had it off; nothing is frozen unless asked."""
    import gc

    import pytest

    from twinsweep.sweep.cli import _start_up

    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    with _start_up():
        assert not gc.isenabled()
    assert gc.isenabled() and gc.get_freeze_count() == frozen
    with pytest.raises(KeyError):
        with _start_up():
            raise KeyError("x")
    assert gc.isenabled()
    gc.disable()
    try:
        with _start_up():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_process_command_line_freezes_its_start_up():
    """main() of the process's own command line freezes what its start-up loaded (gc.freeze);
    the collector runs as before afterwards."""
    code = ("import gc, json, sys\nfrom twinsweep.sweep.cli import main\n"
            "sys.argv = ['twinsweep', 'systems']\nmain()\n"
            "print(json.dumps([gc.get_freeze_count() > 1000, gc.isenabled()]))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(r.stdout.strip().splitlines()[-1]) == [True, True]
