"""The run function the sweep hands to its backend: simulate one grid point and commit its folder.

It runs on the workers (a Ray actor, a pool process or in-process), writes ``runs/<key>/``
itself (atomically, see :func:`sweep.store.commit_run_dir`) and returns only a small summary, so
the driver never holds run outputs. When the workers cannot see the driver's results folder (a
Ray cluster without a shared filesystem), the payload asks to *ship* the files instead: the run
is written to a temporary folder on the worker and its files come back in the result, for the
driver to commit (:func:`commit_shipped`).
"""

from __future__ import annotations

import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from twinsweep.core.atomic import atomic_write_bytes, atomic_write_text
from twinsweep.core.config import RunConfig
from twinsweep.core.errors import PluginError, RunWarning, TwinError, let_through
from twinsweep.core.registry import load_object

from .store import SWEEP_JSON, commit_run_dir, dump_json, run_is_committed


def make_payload(item, runs_dir: str | Path, ship: bool = False, collect_warnings: bool = False) -> dict[str, Any]:
    """The picklable payload of one :class:`sweep.expand.RunItem` for :func:`execute_run`.

    ``runs_dir`` is made absolute here (a worker resolves a relative path against its own working
    directory); ``ship``: return the run's files instead of writing them into ``runs_dir``;
    ``collect_warnings``: the driver reads the outcomes and says the runs' warnings once each
    (:class:`RunWarnings`), so the run returns them instead of letting them through where it runs.
    ``metrics``: the plug-in metrics of the driver, which every run computes without its config
    naming them, so that a worker that lacks one says so (:func:`execute_run`)."""
    from twinsweep.core.metrics import plugin_metrics

    return {
        "key": item.key,
        "metrics": [m.name for m in plugin_metrics()],
        "config": item.config,
        "runs_dir": str(Path(runs_dir).absolute()),
        "ship": bool(ship),
        "collect_warnings": bool(collect_warnings),
        "sweep": {"key": item.key, "dataset": item.dataset, "window": item.window, "seed": item.seed,
                  "axes": {k: v for k, v in item.axes}, "workload_checksum": item.checksum,
                  "config": item.config.to_dict(), "schema_version": 1},
    }


class RunWarnings:
    """The warnings of a sweep's runs, counted per distinct ``(text, "module:Category")`` as
    :func:`execute_run` returns them, then said once each (:meth:`say`): ``"N run(s): TEXT"`` in
    the warning's own category (so that a filter on it still applies; RunWarning when the category
    cannot be imported here). A run's manifest keeps the :class:`~twinsweep.core.errors.RunWarning` ones;
    other categories (a replay over-subscription, a library's) are said here only."""

    def __init__(self):
        self._counts: dict[tuple[str, str], int] = {}

    def add(self, result: dict[str, Any]) -> None:
        """Count the warnings of one run's result (``result["warnings"]``; none when absent)."""
        for text, where in result.get("warnings") or ():
            self._counts[(text, where)] = self._counts.get((text, where), 0) + 1

    def say(self) -> None:
        """Warn once per distinct warning counted so far, then forget them (said once)."""
        counts, self._counts = self._counts, {}
        for (text, where), n in counts.items():
            try:
                category = load_object(where, "warning category")
            except TwinError:
                category = RunWarning
            if not (isinstance(category, type) and issubclass(category, Warning)):
                category = RunWarning
            warnings.warn(f"{n:,} run(s): {text}", category, stacklevel=2)


def execute_run(payload: dict[str, Any], shared: Any) -> dict[str, Any]:
    """Simulate ``payload["config"]`` on the preloaded ``shared = (workload, system)`` and write
    ``runs/<key>/`` (jobs.parquet, timeline.parquet, stats.json, manifest.json, sweep.json).

    Returns ``{"key", "status": "written"|"exists", "sim_s", "warnings"}`` (sim_s: seconds in
    simulate; warnings: with ``payload["collect_warnings"]``, the distinct ``(text,
    "module:Category")`` of the warnings the run raised, caught here so that the driver says each
    once for the whole sweep (:class:`RunWarnings`) instead of every worker printing them; else
    ``[]``, the warnings let through where the run ran, as they are when the run fails); with
    ``payload["ship"]`` nothing is written into ``runs_dir``: ``{"key", "status": "shipped",
    "sim_s", "files": {name: bytes}, "warnings"}``. Exceptions of the twin propagate (the backend records them
    as a failed run). Raises PluginError, writing nothing, when the run's key here is not the
    driver's (:func:`check_same_plugins`): the worker does not have the driver's plug-ins.
    """
    from twinsweep.core.run import simulate, write_run

    runs_dir = Path(payload["runs_dir"])
    key = payload["key"]
    ship = bool(payload.get("ship"))
    if not ship and run_is_committed(runs_dir, key):
        return {"key": key, "status": "exists", "sim_s": 0.0}
    cfg: RunConfig = payload["config"]
    workload, system = shared if shared is not None else (None, None)
    t0 = time.perf_counter()
    collect = bool(payload.get("collect_warnings"))
    caught: list = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = simulate(cfg, workload=workload, system=system)
    except BaseException:
        let_through(caught)  # a failed run's warnings: no result carries them
        raise
    if not collect:  # no driver collects them (twinsweep tune, a detached Slurm array task)
        let_through(caught)
    sim_s = time.perf_counter() - t0
    said = [] if not collect else list(dict.fromkeys(
        (" ".join(str(w.message).split()), f"{w.category.__module__}:{w.category.__qualname__}") for w in caught))
    check_same_plugins(payload, result.manifest)

    def write(tmp: Path, staged: bool = True) -> None:  # staged: commit_run_dir flushes and renames the folder
        write_run(result, tmp, staged=staged)
        atomic_write_text(tmp / SWEEP_JSON, dump_json(payload["sweep"]), staged=staged)

    if ship:
        with tempfile.TemporaryDirectory(prefix="twinsweep-ship-") as tmp:  # read back at once: nothing to flush
            write(Path(tmp))
            files = {p.name: p.read_bytes() for p in sorted(Path(tmp).iterdir()) if p.is_file()}
        return {"key": key, "status": "shipped", "sim_s": sim_s, "files": files, "warnings": said}
    status = commit_run_dir(runs_dir, key, write)
    return {"key": key, "status": status, "sim_s": sim_s, "warnings": said}


def check_same_plugins(payload: dict[str, Any], manifest: dict[str, Any]) -> None:
    """Raise PluginError when the run key this process computed (``manifest["run_key"]``) is not
    the driver's (``payload["key"]``): a plug-in the run uses is missing here or its code differs
    (the key covers plug-in code, docs/architecture.md "Run identity"). A metric registered in the
    driver only (``register_metric`` in a notebook or script) is the usual case: pool, Ray and Slurm
    workers would compute every run without it and the study would rank by a metric no run has."""
    got = manifest.get("run_key")
    if got is None or got == payload["key"]:
        return
    here = sorted(k.split(":", 1)[1] for k in manifest.get("plugins", {}) if k.startswith("metric:"))
    missing = [m for m in payload.get("metrics", ()) if m not in here]
    if missing:
        why = (f"the driver's metric plug-in(s) {', '.join(map(repr, missing))} are not registered in this worker "
               "process (a metric registered in the driver only, e.g. by register_metric in a notebook or script, "
               "is not computed by pool, Ray or Slurm workers); install it through the 'twinsweep.metrics' entry "
               "point (docs/plugins.md, \"Add a metric\"), or run with the local backend and workers = 1")
    else:
        plugins = ", ".join(f"{k} ({v.get('module')}, sha256 {str(v.get('sha256'))[:12]})"
                            for k, v in sorted(manifest.get("plugins", {}).items())) or "none"
        why = ("the plug-ins differ between the driver and this worker: one is missing here, or its code is not the "
               f"same (edited during the sweep, or installed differently); this worker has: {plugins}")
    raise PluginError(f"run {payload['key']}: this worker computes its key as {got}: {why}")


def commit_shipped(runs_dir: str | Path, result: dict[str, Any]) -> str:
    """Commit the files a worker shipped back (:func:`execute_run` with ``ship``) as
    ``runs/<key>/``, atomically; returns ``"written"`` or ``"exists"``."""
    def write(tmp: Path) -> None:
        for name, data in result["files"].items():
            if "/" in name or name.startswith("."):
                raise ValueError(f"shipped run {result['key']}: bad file name {name!r}")
            atomic_write_bytes(tmp / name, data, staged=True)  # commit_run_dir flushes and renames the folder

    return commit_run_dir(runs_dir, result["key"], write)


#: A tiny SWF trace for :func:`warm_up` (4 nodes of 2 cores, 8 jobs that queue, backfill and time out).
_WARM_SWF = """; UnixStartTime: 1000000000
; MaxNodes: 4
; MaxProcs: 8
    1     0   -1   100  4  -1 -1  4   200  -1 1 1 1 -1 1 -1 -1 -1
    2    10   -1   300  8  -1 -1  8   250  -1 1 2 1 -1 1 -1 -1 -1
    3    20   -1    50  2  -1 -1  2   100  -1 1 1 2 -1 1 -1 -1 -1
    4    25   -1    40  2  -1 -1  2   100  -1 1 3 2 -1 1 -1 -1 -1
    5    30   -1    60  6  -1 -1  6   100  -1 1 3 2 -1 1 -1 -1 -1
    6    35   -1    30  2  -1 -1  2    60  -1 1 2 1 -1 1 -1 -1 -1
    7    40   -1    30  2  -1 -1  2    60  -1 1 2 1 -1 1 -1 -1 -1
    8    45   -1   500  8  -1 -1  8   100  -1 1 1 1 -1 1 -1 -1 -1
"""


def warm_up() -> float:
    """Run the run path once on a tiny trace (:data:`_WARM_SWF`, sjf with conservative
    backfilling and the cooling plant), so that this process holds
    what a first run otherwise loads itself: the lazily imported modules (cooling plant, numba and
    the conservative-backfilling profile pass, with its compiled code read from numba's cache).
    The local pool's forkserver calls it once (:mod:`sweep.warm`); every worker it forks then
    starts warm: about 1 s CPU less in each worker's first conservative run (1.2 -> 0.13 s, KTH-SP2
    3 days, load 11), for about 1.3 s CPU in the server once per driver process (a sweep's later
    pools, its retry rounds, and every worker beyond the first gain it whole). Writes nothing (the
    trace is a temporary file, removed; the outputs are not written). Returns the CPU seconds it
    took; never raises (a failure only leaves the process cold: it returns -1.0)."""
    c0 = time.process_time()
    try:
        from twinsweep.core.run import load_run_inputs, simulate

        with tempfile.TemporaryDirectory(prefix="twinsweep-warm-") as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trace = Path(tmp) / "warm.swf"
            atomic_write_text(trace, _WARM_SWF, sync=False)
            cfg = RunConfig(data=str(trace), policy="sjf", backfill="conservative", sample_period=60, cooling=True)
            simulate(cfg, *load_run_inputs(cfg))
    except Exception:  # noqa: BLE001 - a warm-up that fails only costs the speed-up
        return -1.0
    return time.process_time() - c0
