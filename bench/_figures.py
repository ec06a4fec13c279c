"""The benchmarks' record of their figures: ``bench/figures.json`` (shared by the ``bench/`` scripts).

Every benchmark prints its figures beside their goals and also calls :func:`record` for each, which
stores one entry per figure in ``bench/figures.json`` (read-modify-write under an exclusive
``flock``, written with ``core.atomic.atomic_write_text``): the figure, its goal and whether it is
met, the command that measures it, the date (UTC) and the machine (cores, CPU model, load average,
Python). ``bench/readme_figures.py`` renders the README's speed table from that file alone, so the
README's figures are the benchmarks' output, never typed (issue 16, item 5).

A benchmark whose run fails records nothing for it and exits non-zero (:func:`fail`).
"""

from __future__ import annotations

import datetime
import fcntl
import json
import os
import platform
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
FIGURES = BENCH / "figures.json"

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def machine() -> dict:
    """``{"cores", "cpu", "load_average", "python"}``: core count, CPU model (``/proc/cpuinfo``), the
    1-minute load average now (other processes share the cores) and the Python version."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cores": os.cpu_count(), "cpu": model, "load_average": round(os.getloadavg()[0], 1),
            "python": platform.python_version()}


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's waited-for children and their threads so far
    (``getrusage(RUSAGE_CHILDREN)``): the difference around a child is the child's CPU time."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def goal_text(goal: str | None, met: bool | None) -> str:
    """``(goal <= 1.5 s: met)``-style suffix printed beside a figure; ``(no goal)`` without one."""
    if goal is None:
        return "(no goal)"
    return f"(goal {goal}" + ("" if met is None else f": {'met' if met else 'NOT met'}") + ")"


def record(key: str, what: str, figure: str, *, goal: str | None = None, met: bool | None = None,
           command: str, path: Path | None = None) -> dict:
    """Store one figure in ``figures.json`` (replacing the entry of the same ``key``).

    ``key``: stable id, ``bench/topic/detail`` (also the README's sort key); ``what``: what was
    measured (trace, variant, conditions); ``figure``: the measured values with units; ``goal``:
    the goal's text (e.g. ``"<= 25 ms"``) or None; ``met``: whether the figure meets it (None when
    there is no goal or it cannot be judged); ``command``: how to measure it again. Returns the
    entry. Raises OSError when the file cannot be written.
    """
    from twinsweep.core.atomic import atomic_write_text

    path = path or Path(os.environ.get("TWINSWEEP_BENCH_FIGURES", FIGURES))
    entry = {"key": key, "what": what, "figure": figure, "goal": goal, "met": met, "command": command,
             "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
             "machine": machine()}
    lock = path.with_name(path.name + ".lock")
    with open(lock, "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        entries = load(path) if path.exists() else {}
        entries[key] = entry
        atomic_write_text(path, json.dumps(dict(sorted(entries.items())), indent=1, ensure_ascii=False) + "\n")
    return entry


def load(path: Path | None = None) -> dict:
    """``{key: entry}`` of ``figures.json``; ValueError naming the file and entry when one is malformed."""
    path = path or FIGURES
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected a JSON object {{key: entry}}")
    need = ("key", "what", "figure", "goal", "met", "command", "date", "machine")
    for key, e in doc.items():
        missing = [f for f in need if not isinstance(e, dict) or f not in e]
        if missing:
            raise ValueError(f"{path}: entry {key!r} lacks field(s) {missing}")
        if not isinstance(e["machine"], dict) or set(e["machine"]) != {"cores", "cpu", "load_average", "python"}:
            raise ValueError(f"{path}: entry {key!r}: machine must be {{cores, cpu, load_average, python}}")
        if e["key"] != key:
            raise ValueError(f"{path}: entry {key!r} has key {e['key']!r}")
    return doc


def fail(msg: str) -> None:
    """Print ``FAILED: msg`` on stderr; the caller exits non-zero (see each benchmark's ``main``)."""
    print(f"FAILED: {msg}", file=sys.stderr, flush=True)
