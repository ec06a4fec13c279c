"""The README's speed figures are the benchmarks' output, not typed (issue 16, item 5).

``bench/readme_figures.py`` renders the README block between its markers from ``bench/figures.json``
(which ``bench/_figures.py`` fills as each benchmark prints a figure). These tests check that the
README's block equals that rendering (a hand edit or a stale block fails; timings are not re-run),
and the renderer, the record and the benchmarks' exit status on small hand-made inputs.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import _figures  # noqa: E402
import readme_figures as rf  # noqa: E402


def _entry(key, figure="1.00 s CPU", goal=None, met=None, load=0.5, cpu="CPU X", what=None):
    return {"key": key, "what": what or f"what {key}", "figure": figure, "goal": goal, "met": met,
            "command": f"python bench/x.py {key}", "date": "2026-12-01 18:00 UTC",
            "machine": {"cores": 2, "cpu": cpu, "load_average": load, "python": "3.11.7"}}


def test_readme_block_is_the_rendering_of_figures_json():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    i, j = rf.block(text)
    assert text[i:j] == rf.render(_figures.load(ROOT / "bench" / "figures.json")), (
        "README.md's figures block differs from bench/figures.json: run python bench/readme_figures.py "
        "(figures are written by the benchmarks, never typed)")


def test_figures_json_entries_are_well_formed():
    for key, e in _figures.load(ROOT / "bench" / "figures.json").items():
        if e["goal"] is None:
            assert e["met"] is None, f"{key}: a verdict without a goal"
        assert e["command"].startswith("python bench/"), key


def test_render_rows_order_goal_and_escaping():
    entries = {k: _entry(k) for k in ("aggregate/t", "twin/b", "twin/a", "zzz/other")}
    entries["twin/a"] = _entry("twin/a", figure="3 | 4", goal="<= 25 ms", met=False)
    entries["aggregate/t"] = _entry("aggregate/t", goal="<= 10 s", met=True, load=2.25)
    out = rf.render(entries).splitlines()
    assert out[0] == rf.BEGIN and out[-1] == rf.END
    rows = [line for line in out if line.startswith("| ")]  # the header, then one row per entry
    assert rows[0].startswith("| what | figure | goal |")
    # SECTIONS order (twin/ first, aggregate/ last of the known), unknown prefixes after, keys sorted within
    assert [r.split(" | ")[0][2:] for r in rows[1:]] == ["what twin/a", "what twin/b", "what aggregate/t",
                                                         "what zzz/other"]
    assert "3 \\| 4 | <= 25 ms: **not met** |" in rows[1]
    assert "| <= 10 s: met | 2026-12-01, load 2.2, `python bench/x.py aggregate/t` |" in rows[3]
    assert "| — |" in rows[2]
    assert out.count("Machine: 2 cores, CPU X, Python 3.11.7 (shared with other work: the load average is beside "
                     "each figure).") == 1


def test_render_numbers_machines_when_there_are_several():
    out = rf.render({"twin/a": _entry("twin/a", cpu="A"), "twin/b": _entry("twin/b", cpu="B")})
    assert "(machine 1)" in out and "(machine 2)" in out
    assert "Machine 1: 2 cores, A," in out and "Machine 2: 2 cores, B," in out


def test_rewrite_replaces_only_the_block_and_is_idempotent(tmp_path):
    figs = tmp_path / "figures.json"
    figs.write_text(json.dumps({"twin/a": _entry("twin/a")}))
    readme = tmp_path / "README.md"
    readme.write_text(f"# title\n\nbefore\n\n{rf.BEGIN}\n| typed | 1 s |\n{rf.END}\n\nafter\n")
    assert rf.rewrite(readme, figs) is True
    text = readme.read_text()
    assert text == "# title\n\nbefore\n\n" + rf.render(_figures.load(figs)) + "\nafter\n"
    assert rf.rewrite(readme, figs) is False and readme.read_text() == text
    assert rf.main(["--check", "--readme", str(readme), "--figures", str(figs)]) == 0
    readme.write_text(text.replace("1.00 s CPU", "0.50 s CPU"))  # a hand edit
    assert rf.main(["--check", "--readme", str(readme), "--figures", str(figs)]) == 1


@pytest.mark.parametrize("text, msg", [("no markers\n", "found 0 and 0"),
                                       (f"{rf.BEGIN}\n{rf.BEGIN}\n{rf.END}\n", "found 2 and 1"),
                                       (f"{rf.END}\n{rf.BEGIN}\n", "before the begin")])
def test_block_markers_missing_repeated_or_swapped(text, msg):
    with pytest.raises(ValueError, match=msg):
        rf.block(text, "X.md")


def test_record_adds_and_replaces_entries(tmp_path):
    path = tmp_path / "figures.json"
    e = _figures.record("twin/a", "w", "1 s", goal="<= 2 s", met=True, command="python bench/x.py", path=path)
    _figures.record("sweep/b", "w", "5 s", command="python bench/y.py", path=path)
    _figures.record("twin/a", "w", "3 s", goal="<= 2 s", met=False, command="python bench/x.py", path=path)
    doc = _figures.load(path)
    assert list(doc) == ["sweep/b", "twin/a"]  # sorted keys: stable diffs
    assert doc["twin/a"]["figure"] == "3 s" and doc["twin/a"]["met"] is False and doc["sweep/b"]["goal"] is None
    assert set(e["machine"]) == {"cores", "cpu", "load_average", "python"}


def test_load_names_the_malformed_entry(tmp_path):
    path = tmp_path / "figures.json"
    bad = _entry("twin/a")
    del bad["goal"]
    path.write_text(json.dumps({"twin/a": bad}))
    with pytest.raises(ValueError, match=r"figures.json: entry 'twin/a' lacks field\(s\) \['goal'\]"):
        _figures.load(path)
    path.write_text(json.dumps({"twin/b": _entry("twin/a")}))
    with pytest.raises(ValueError, match="entry 'twin/b' has key 'twin/a'"):
        _figures.load(path)


def test_bench_twin_exits_nonzero_when_a_run_fails(tmp_path):
    # a trace the data folder does not hold (and the package does not ship: KTH and SDSC are
    # bundled for the quickstart): the child fails, the benchmark says FAILED and exits 1, and
    # records nothing
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "TWINSWEEP_DATA": str(tmp_path),
           "TWINSWEEP_BENCH_FIGURES": str(tmp_path / "figures.json")}
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_twin.py"), "--traces", "RICC", "--backfills", "easy"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAILED" in r.stdout and "FAILED: RICC fcfs+easy" in r.stderr
    assert not (tmp_path / "figures.json").exists()
