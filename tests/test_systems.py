"""Named systems (core/systems/*.toml): they load, cite their sources, match every shipped trace, and
the rejected-job counts written in their header comments hold."""

from __future__ import annotations

import tomllib

import pytest

from conftest import data_path, load_cached
from twinsweep.core.data import data_dir
from twinsweep.core.errors import ConfigError, UnknownNameError
from twinsweep.core.system import (SYSTEMS_DIR, header_mismatch, list_systems, load_system, system_for_trace,
                                   system_from_swf_header)

TOMLS = sorted(SYSTEMS_DIR.glob("*.toml"))

#: trace (relative to the data folder) -> (system, jobs too large, jobs without a size), as written in
#: each system file's header comment ("Rejected at submit with this choice: ...").
EXPECTED = {
    "pwa-swf/CEA-Curie-2011-2.1-cln.swf.gz": ("cea-curie", 0, 19),
    "pwa-swf/HPC2N-2002-2.2-cln.swf.gz": ("hpc2n-seth", 0, 0),
    "pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz": ("kth-sp2", 0, 1),
    "pwa-swf/LANL-CM5-1994-4.1-cln.swf.gz": ("lanl-cm5", 0, 3),
    "pwa-swf/LCG-2005-1.swf.gz": ("lcg-grid", 0, 0),
    "pwa-swf/LLNL-Atlas-2006-2.1-cln.swf.gz": ("llnl-atlas", 0, 4571),
    "pwa-swf/NASA-iPSC-1993-3.1-cln.swf.gz": ("nasa-ipsc", 0, 0),
    "pwa-swf/OSC-Clust-2000-3.1-cln.swf.gz": ("osc-cluster", 0, 0),
    "pwa-swf/RICC-2010-2.swf.gz": ("ricc", 0, 0),
    "pwa-swf/SDSC-BLUE-2000-4.2-cln.swf.gz": ("sdsc-blue", 0, 0),
    "pwa-swf/SDSC-Par-1996-3.1-cln.swf.gz": ("sdsc-paragon", 0, 0),
    "pwa-swf/SDSC-SP2-1998-4.2-cln.swf.gz": ("sdsc-sp2", 0, 0),
    "metacentrum-wagap-2013/wagap-2013.swf.gz": ("metacentrum-wagap", 0, 0),
    **{f"alcf-theta-dras-jobsets/real_week_{i}.swf.gz": ("alcf-theta", 0, 0) for i in range(1, 10)},
    "alcf-theta-dras-jobsets/validation_2023_jan.swf.gz": ("alcf-theta", 0, 0),
    "alcf-theta-dras-jobsets/test_2023_feb_dec.swf.gz": ("alcf-theta", 0, 0),
}
DATA_FOLDERS = ("pwa-swf", "alcf-theta-dras-jobsets", "metacentrum-wagap-2013")


def test_every_toml_loads_with_unique_names():
    assert len(TOMLS) >= 14
    systems = [load_system(p) for p in TOMLS]
    names = [s.name for s in systems]
    assert len(set(names)) == len(names)
    for p, s in zip(TOMLS, systems):
        assert p.stem == s.name  # load_system(name) finds it
        assert s.name == s.name.lower() and s.title and s.nodes >= 1 and s.cores_per_node >= 1
        assert s.traces, s.name
        assert load_system(s.name) == s
    assert [s.name for s in list_systems()] == sorted(names)


@pytest.mark.parametrize("path", TOMLS, ids=[p.stem for p in TOMLS])
def test_power_has_status_and_sources(path):
    text = path.read_text()
    doc = tomllib.loads(text)
    assert doc["power"]["status"] in ("assumed", "published")
    for key in ("cpu_idle_w", "cpu_max_w", "node_converter", "rectifier"):
        assert key in doc["power"], key
    sources = doc.get("sources", [])
    assert sources and all(src.get("what") and src.get("cite") for src in sources)
    cited = " ".join(src["what"] for src in sources)
    assert "cpu_max_w" in cited and "node_converter" in cited and "nodes" in cited
    if doc["power"]["status"] == "assumed":
        assert any("assumed" in src["cite"] for src in sources)
    s = load_system(path)
    assert 0 <= s.power.cpu_idle_w <= s.power.cpu_max_w
    assert s.power_label == doc["power"]["status"]
    # the header comment states the node choice and the rejected-job count
    assert "Node choice" in text and "Rejected at submit" in text


def test_system_for_trace_covers_every_trace_file():
    found = 0
    for folder in DATA_FOLDERS:
        d = data_dir() / folder
        if not d.is_dir():
            data_path(folder)  # skip locally / fail in CI
        for f in sorted(d.iterdir()):
            if f.name.endswith((".md", ".machines")):
                continue
            s = system_for_trace(str(f))
            assert s is not None, f.name
            assert EXPECTED[f"{folder}/{f.name}"][0] == s.name
            found += 1
    assert found == len(EXPECTED)
    assert system_for_trace("KTH-SP2-1996-2.1-cln.swf").name == "kth-sp2"  # uncompressed name too
    assert system_for_trace("/elsewhere/unknown.swf") is None


@pytest.mark.parametrize("rel", sorted(EXPECTED), ids=[r.split("/")[-1] for r in sorted(EXPECTED)])
def test_rejected_job_counts_match_the_system_files(rel):
    name, too_big, no_size = EXPECTED[rel]
    wl = load_cached(rel)
    system = system_for_trace(rel)
    assert system.name == name
    nodes = wl.with_nodes(system.cores_per_node).jobs["nodes"]
    assert int((nodes > system.nodes).sum()) == too_big
    assert int((nodes.isna() | (nodes <= 0)).sum()) == no_size


def test_metacentrum_slots_match_the_system():
    wl = load_cached("metacentrum-wagap-2013/wagap-2013.swf.gz")
    s = load_system("metacentrum-wagap")
    assert wl.header["loader_placement"]["slots"] == s.nodes and s.cores_per_node == 1
    assert (wl.with_nodes(s.cores_per_node).jobs["nodes"] == wl.jobs["procs"]).all()


def _write(tmp_path, body: str):
    p = tmp_path / "bad.toml"
    p.write_text(body)
    return p


GOOD = '[system]\nname = "x"\nnodes = 4\n\n[power]\nstatus = "assumed"\ncpu_max_w = 10.0\n'


def test_bad_toml_names_the_key(tmp_path):
    assert load_system(_write(tmp_path, GOOD)).nodes == 4
    with pytest.raises(ConfigError, match="nodez"):
        load_system(_write(tmp_path, GOOD.replace("nodes = 4", "nodes = 4\nnodez = 5")))
    with pytest.raises(ConfigError, match="cpu_maxx_w"):
        load_system(_write(tmp_path, GOOD + "cpu_maxx_w = 1.0\n"))
    with pytest.raises(ConfigError, match="etta"):
        load_system(_write(tmp_path, GOOD + "node_converter = { etta = 0.9 }\n"))
    with pytest.raises(ConfigError, match="status"):
        load_system(_write(tmp_path, GOOD.replace('"assumed"', '"guessed"')))
    with pytest.raises(ConfigError, match="nodes"):
        load_system(_write(tmp_path, '[system]\nname = "x"\n'))
    with pytest.raises(ConfigError):
        load_system(_write(tmp_path, "[system\nname="))
    with pytest.raises(UnknownNameError, match="kth-sp2"):
        load_system("no-such-system")


@pytest.mark.parametrize("extra, message", [
    ("mem_w = -400.0\n", r"bad.toml \[power\]: mem_w must be a finite number of watts >= 0, got -400.0"),
    ("gpu_idle_w = 50.0\ngpu_max_w = 10.0\n", r"bad.toml \[power\]: gpu_max_w \(10 W\) is below gpu_idle_w \(50 W\)"),
    ("cpu_idle_w = 11.0\n", r"cpu_max_w \(10 W\) is below cpu_idle_w \(11 W\)"),
    ("default_cpu_util = 1.5\n", r"\[power\]: default_cpu_util must be a utilisation in 0..1, got 1.5"),
    ("switches = -2\n", r"\[power\]: switches must be a whole number >= 0, got -2"),
    ("other_w = nan\n", r"other_w must be a finite number of watts >= 0, got nan"),
    ("node_converter = { eta = 1.5 }\n", r"bad.toml \[power.node_converter\]: converter eta must be in \(0, 1\], got 1.5"),
    ('rectifier = { c_w = "ten" }\n', r"bad.toml \[power.rectifier\]: could not convert string to float: 'ten'"),
])
def test_power_values_no_machine_has_are_refused_naming_the_file_and_key(tmp_path, extra, message):
    """A negative power, a device whose full-load power is below its idle power, a default
    utilisation outside 0..1, a negative count or a converter efficiency above 1: one ConfigError
    naming the file, the table and the key, when the system is loaded (before any run)."""
    with pytest.raises(ConfigError, match=message):
        load_system(_write(tmp_path, GOOD + extra))
    assert load_system(_write(tmp_path, GOOD + "cpu_idle_w = 10.0\nmem_w = 0\n")).power.cpu_idle_w == 10.0  # equal: fine


def test_a_trace_without_a_machine_size_says_what_its_header_gives(tmp_path):
    """No system named or catalogued and no size in the trace: the error says what the header gives
    (both fields -1: unknown) or that the trace states none (an accounting dump), never SWF's field
    names alone for a file that has no SWF header."""
    with pytest.raises(ConfigError, match=r"x.swf: no system named or catalogued for this trace, and its header gives "
                                          r"MaxNodes -1 and MaxProcs -1 \(-1 and 0 mean unknown\); pass --system"):
        system_from_swf_header({"MaxNodes": -1, "MaxProcs": -1}, "x.swf")
    with pytest.raises(ConfigError, match=r"dump.txt: .* it states no machine size \(an SWF header's MaxNodes / "
                                          r"MaxProcs; accounting dumps such as sacct have none\)"):
        system_from_swf_header({}, "dump.txt")


def test_header_fields_after_the_first_job_line_are_said_not_read(tmp_path):
    """``; MaxNodes:`` lines after job lines are not an SWF header: the load says so, naming the
    first such line, and the size is not taken from them."""
    from twinsweep.core.loaders import load_workload

    log = tmp_path / "late.swf"
    log.write_text("; Version: 2.2\n"
                   "1 0 0 100 2 -1 -1 2 200 -1 1 1 1 -1 -1 -1 -1 -1\n"
                   "2 10 0 100 2 -1 -1 2 200 -1 1 1 1 -1 -1 -1 -1 -1 ; a trailing comment\n"
                   ";   MaxNodes: 100\n; MaxProcs: 100\n")
    wl = load_workload(log)
    assert "MaxNodes" not in wl.header
    assert any(w == "late.swf: header field(s) MaxNodes, MaxProcs stand after the first job line (line 4 first): an "
                    "SWF header comes before the jobs, so they are not read; move them to the top of the file"
               for w in wl.warnings), wl.warnings
    log.write_text("; MaxNodes: 8\n1 0 0 100 2 -1 -1 2 200 -1 1 1 1 -1 -1 -1 -1 -1\n; MaxNodes: 100\n")
    assert any("(line 3 first)" in w and "(the header read says: MaxNodes 8)" in w for w in load_workload(log).warnings)


def test_system_from_swf_header_values():
    s = system_from_swf_header(load_cached("pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz").header, "KTH-SP2-1996-2.1-cln.swf.gz")
    assert (s.nodes, s.cores_per_node, s.default_time_limit, s.generic) == (100, 1, None, True)
    assert s.name == "generic:kth-sp2-1996-2" and s.power_label == "assumed"
    s = system_from_swf_header(load_cached("pwa-swf/RICC-2010-2.swf.gz").header, "RICC-2010-2.swf.gz")
    assert (s.nodes, s.cores_per_node) == (1024, 8)
    s = system_from_swf_header(load_cached("pwa-swf/LCG-2005-1.swf.gz").header, "LCG-2005-1.swf.gz")
    assert (s.nodes, s.cores_per_node) == (24515, 1)  # MaxProcs only
    s = system_from_swf_header(load_cached("pwa-swf/SDSC-Par-1996-3.1-cln.swf.gz").header)
    assert (s.nodes, s.cores_per_node) == (400, 1)  # "400 (48 interactive, ...)"
    s = system_from_swf_header(load_cached("pwa-swf/SDSC-BLUE-2000-4.2-cln.swf.gz").header)
    assert (s.nodes, s.cores_per_node) == (144, 8)
    theta = load_cached("alcf-theta-dras-jobsets/validation_2023_jan.swf.gz")
    s = system_from_swf_header(theta.header, theta.source, procs_unit=theta.procs_unit)
    assert (s.nodes, s.cores_per_node) == (4360, 1)
    s = system_from_swf_header({"MaxNodes": 8, "MaxProcs": 32, "MaxRuntime": 3600})
    assert (s.nodes, s.cores_per_node, s.default_time_limit) == (8, 4, 3600)
    with pytest.raises(ConfigError, match="MaxNodes"):
        system_from_swf_header({"Computer": "x"}, "x.swf")


def test_header_numbers_as_people_write_them_and_what_is_not_a_number():
    """``1,024`` and ``64.0`` are numbers; -1 (SWF's unknown) and 0 are not given; anything else
    is one error naming the field and its text, never "the header has neither field"."""
    assert system_from_swf_header({"MaxProcs": "1,024"}, "a.swf").nodes == 1024
    s = system_from_swf_header({"MaxNodes": "64", "MaxProcs": "64.0", "MaxRuntime": "-1"}, "a.swf")
    assert (s.nodes, s.cores_per_node, s.default_time_limit) == (64, 1, None)
    s = system_from_swf_header({"MaxNodes": "0", "MaxProcs": "64"}, "a.swf")
    assert s.nodes == 64 and "MaxNodes 0" in s.sources[0]["cite"]
    for bad in ("lots", "3.5", "-4"):
        with pytest.raises(ConfigError, match=f"a.swf: SWF header field MaxProcs is '{bad}', not a whole number"):
            system_from_swf_header({"MaxNodes": "64", "MaxProcs": bad}, "a.swf")


def test_a_header_whose_procs_are_not_a_multiple_of_its_nodes_gives_processor_slots():
    """OSC's cluster, 32 quad + 25 dual nodes (MaxNodes 57, MaxProcs 178): no one node size holds
    it, so the generic system allocates its 178 processors (not 57 one-processor nodes, a third of
    its capacity), and says how it was derived."""
    s = system_from_swf_header({"MaxNodes": 57, "MaxProcs": 178}, "OSC.swf")
    assert (s.nodes, s.cores_per_node) == (178, 1)
    assert "not a multiple" in s.sources[0]["cite"] and s.sources[0]["what"] == "nodes, cores_per_node"
    s = system_from_swf_header({"MaxNodes": 8, "MaxProcs": 32})
    assert "8 nodes of 4 processors" in s.sources[0]["cite"]
    s = system_from_swf_header({"MaxNodes": 128, "MaxProcs": 64})  # an odd header: the machine is not shrunk
    assert (s.nodes, s.cores_per_node) == (128, 1) and "below MaxNodes" in s.sources[0]["cite"]


def test_a_header_that_disagrees_with_the_system_its_file_name_chose_is_said(tmp_path):
    """Every catalogued trace's header agrees with its named system (within 10 %); a 64-processor
    log saved as KTH's file name is said, by run and by validate, before its figures are read."""
    import gzip

    from twinsweep.core.loaders._swfcore import parse_swf_header

    checked = 0
    for s in list_systems():
        for name in s.traces:
            for folder in (data_dir(), SYSTEMS_DIR.parent / "bundled"):
                hits = list(folder.glob(f"*/{name}")) if folder.is_dir() else []
                for path in hits:
                    opener = gzip.open if path.suffix == ".gz" else open
                    with opener(path, "rt", errors="replace") as fh:
                        head = [line for _, line in zip(range(400), fh) if line.startswith(";")]
                    assert header_mismatch(s, parse_swf_header(head), "cores", str(path)) is None, path
                    checked += 1
    assert checked >= 2  # at least the bundled quickstart traces
    kth = load_system("kth-sp2")
    msg = header_mismatch(kth, {"MaxNodes": "64", "MaxProcs": "64"}, "cores", "x/KTH-SP2-1996-2.1-cln.swf")
    assert "header says MaxProcs 64" in msg and "kth-sp2, has 100 processors" in msg
    assert header_mismatch(kth, {"MaxProcs": "105"}) is None and header_mismatch(kth, {}) is None
    # nodes against nodes when the header has no MaxProcs (CEA-Curie: 5,832 nodes of 16 cores)
    curie = load_system("cea-curie")
    assert header_mismatch(curie, {"MaxNodes": str(curie.nodes)}) is None
    assert "MaxNodes 1,000" in header_mismatch(curie, {"MaxNodes": "1000"}) and f"{curie.nodes:,} nodes" in \
        header_mismatch(curie, {"MaxNodes": "1000"})

    from twin_helpers import write_swf_rows
    from twinsweep.core import RunConfig, simulate

    log = write_swf_rows(tmp_path / "KTH-SP2-1996-2.1-cln.swf", [(i + 1, 600 * i, 0, 300, 2) for i in range(20)],
                         max_nodes=64)
    res = simulate(RunConfig(data=str(log), policy="fcfs", backfill="easy"))
    assert any("header says MaxProcs 64" in w for w in res.warnings)
    res = simulate(RunConfig(data=str(log), system="kth-sp2", policy="fcfs", backfill="easy"))
    assert not any("header says" in w for w in res.warnings)  # chosen by the user: no remark


def test_a_sweep_dataset_under_a_catalogued_name_is_told_its_header_disagrees(tmp_path):
    """The sweep's dataset loading says it too, once per dataset (a sweep's runs carry the chosen
    system's name, so no run could tell it was chosen by the file name)."""
    from twin_helpers import write_swf_rows
    from twinsweep.sweep.expand import load_dataset
    from twinsweep.sweep.spec import Dataset

    log = write_swf_rows(tmp_path / "KTH-SP2-1996-2.1-cln.swf", [(i + 1, 600 * i, 0, 300, 2) for i in range(20)],
                         max_nodes=64)
    loaded = load_dataset(Dataset(name="k", trace=str(log)))
    assert loaded.system.name == "kth-sp2"
    assert any(w.startswith("dataset k: ") and "header says MaxProcs 64" in w for w in loaded.warnings)
    assert not any("header says" in w for w in load_dataset(Dataset(name="k", trace=str(log), system="kth-sp2")).warnings)
