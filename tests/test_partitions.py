"""Partitioned machines (``[[system.partitions]]``, core/partitions.py): disjoint node pools,
each scheduled on its own, merged into one machine's outputs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from twin_helpers import frame
from twinsweep.core.backfill import BUILTIN_BACKFILLS as BACKFILLS
from twinsweep.core.config import RunConfig
from twinsweep.core.errors import ConfigError
from twinsweep.core.run import simulate
from twinsweep.core.system import Partition, System, system_from_dict
from twinsweep.core.workload import Workload

# two pools: "thin" 6 nodes (default), "fat" 4 nodes serving partition "2" (header name "large")
_PARTS = (Partition("thin", 6, ("1",), True), Partition("fat", 4, ("large",)))
# 0: fat 4 nodes [0, 100); 1: thin 6 nodes [0, 50); 2: fat 2 nodes, submitted at 10: the fat pool
# is full until 100, while thin nodes are idle from 50 on; 3: a job of a partition no pool names
# (7) runs on the default pool (thin), after job 1
_JOBS = [dict(submit=0, run=100, limit=100, nodes=4, partition="2"),
         dict(submit=0, run=50, limit=50, nodes=6, partition="1"),
         dict(submit=10, run=30, limit=30, nodes=2, partition="2"),
         dict(submit=20, run=10, limit=10, nodes=3, partition="7")]


def _wl(jobs, names=None):
    return Workload(jobs=frame(jobs), epoch=0, checksum="sha256:partitions-test", source="parts.swf",
                    format="test", header={"Partition": names or {"2": "large"}})


def _sim(jobs, parts=_PARTS, backfill="easy", policy="fcfs", names=None, **kw):
    system = System(name="p", title="p", nodes=sum(p.nodes for p in parts), partitions=parts, **kw)
    cfg = RunConfig(data="parts.swf", policy=policy, backfill=backfill, sample_period=10)
    return simulate(cfg, workload=_wl(jobs, names), system=system)


@pytest.mark.parametrize("backfill", BACKFILLS)
def test_a_job_waits_for_its_own_partition_only(backfill):
    res = _sim(_JOBS, backfill=backfill)
    j = res.jobs
    # by hand: job 2 (fat) waits for job 0 to end at 100, though 0 thin nodes... the thin pool
    # cannot take it; job 3 (default pool) waits for job 1's 6 thin nodes until 50
    assert j["start_time"].tolist() == [0, 0, 100, 50]
    # node ids are machine-wide: thin 0..5, fat 6..9 (the partitions' order in the file)
    assert list(j["node_ids"][0]) == [6, 7, 8, 9] and list(j["node_ids"][1]) == [0, 1, 2, 3, 4, 5]
    assert list(j["node_ids"][2]) == [6, 7] and list(j["node_ids"][3]) == [0, 1, 2]
    assert res.stats["counts"]["partitions"] == 2


def test_one_pool_would_have_started_it_at_once():
    # the same jobs on one 10-node machine: job 2 fits beside job 0 at 50 (when job 1 ends); the
    # partitions are what delays it
    system = System(name="p", title="p", nodes=10)
    cfg = RunConfig(data="parts.swf", policy="fcfs", backfill="easy", sample_period=10)
    assert simulate(cfg, workload=_wl(_JOBS), system=system).jobs["start_time"].tolist() == [0, 0, 50, 50]


def test_merged_busy_nodes_are_the_pools_sum():
    res = _sim(_JOBS)
    # by hand, busy nodes: [0, 50) 4 + 6; [50, 60) 4 + 3; [60, 100) 4; [100, 130) 2 (the run's end)
    tl = res.timeline.set_index("time")
    assert tl["busy_nodes"].tolist() == [10] * 5 + [7] + [4] * 4 + [2] * 3
    # queued: job 2 (fat) from 10 to 100, job 3 (thin) from 20 to 50
    assert tl["queued_jobs"].tolist() == [0, 1] + [2] * 3 + [1] * 5 + [0] * 3


def test_merged_power_counts_every_pools_idle_nodes():
    # every node draws 10 W busy or idle: the machine's IT power is 100 W at every instant, the
    # pool that is idle included (before its first job and after its last)
    from twinsweep.core.system import PowerModel

    res = _sim(_JOBS, power=PowerModel(other_w=10.0))
    assert np.allclose(res.timeline["it_power_w"], 100.0)


def test_unserved_partition_is_one_error_naming_the_values():
    parts = (Partition("thin", 6, ("1",)), Partition("fat", 4, ("large",)))
    with pytest.raises(ConfigError, match=r"partition values: 7: 1 job;") as e:
        _sim(_JOBS, parts=parts)
    assert "default = true" in str(e.value)


def test_external_scheduler_is_refused_on_a_partitioned_machine():
    system = System(name="p", title="p", nodes=10, partitions=_PARTS)
    cfg = RunConfig(data="parts.swf", policy="external", backfill="none", scheduler="python -c pass")
    with pytest.raises(ConfigError, match="partitioned"):
        simulate(cfg, workload=_wl(_JOBS), system=system)


def test_each_partition_has_its_own_calendar():
    # the fat pool has 2 of its 4 nodes down on [0, 1000): job 0 (4 fat nodes) waits for their return
    parts = (Partition("thin", 6, ("1",), True), Partition("fat", 4, ("large",), False, ((0, 1000, 2),)))
    j = _sim(_JOBS, parts=parts).jobs
    assert j["start_time"].tolist()[1] == 0 and j["start_time"].tolist()[0] == 1000
    # job 2 (2 fat nodes, ends by 40) is backfilled at its submit on the 2 fat nodes left, before
    # job 0's reservation at the period's end
    assert j["start_time"].tolist()[2] == 10


def test_capacity_never_exceeded_in_any_pool():
    rng = np.random.default_rng(3)
    jobs = [dict(submit=int(rng.integers(0, 500)), run=int(rng.integers(1, 200)), limit=200,
                 nodes=int(rng.integers(1, 5)), partition=str(rng.integers(1, 3))) for _ in range(120)]
    jobs.sort(key=lambda x: x["submit"])
    parts = (Partition("a", 6, ("1",)), Partition("b", 4, ("2",)))
    j = _sim(jobs, parts=parts, names={}).jobs
    for p, lo, n in (("1", 0, 6), ("2", 6, 4)):
        sub = j[j["partition"] == p]
        assert all(lo <= i < lo + n for ids in sub["node_ids"] for i in ids)
        t = np.unique(np.concatenate([sub["start_time"], sub["end_time"]]).astype(int))
        busy = [int(sub["nodes"][(sub["start_time"] <= x) & (sub["end_time"] > x)].sum()) for x in t]
        assert max(busy) <= n
    assert (j["start_time"] >= j["submit_time"]).all()


def test_system_file_partitions_are_checked():
    base = {"system": {"name": "x", "nodes": 10}}

    def load(parts, **extra):
        return system_from_dict({"system": {**base["system"], **extra, "partitions": parts}}, "x.toml")

    s = load([{"name": "a", "nodes": 6, "serves": [1, "batch"], "default": True},
              {"name": "b", "nodes": 4, "serves": ["large"], "availability": [{"start": "1d", "end": "2d", "nodes_down": 4}]}])
    assert s.partitions[0].serves == ("1", "batch") and s.partitions[1].availability == ((86400, 172800, 4),)
    for parts, msg in (
            ([{"name": "a", "nodes": 6, "serves": ["1"]}], "add up"),
            ([{"name": "a", "nodes": 6, "serves": ["1"]}, {"name": "a", "nodes": 4, "serves": ["2"]}], "distinct"),
            ([{"name": "a", "nodes": 6, "serves": ["1"]}, {"name": "b", "nodes": 4, "serves": ["1"]}], "both"),
            ([{"name": "a", "nodes": 6, "default": True}, {"name": "b", "nodes": 4, "default": True}], "at most one"),
            ([{"name": "a", "nodes": 6, "serves": ["1"]}, {"name": "b", "nodes": 4}], "serves nothing"),
            ([{"name": "a", "nodes": 6, "serves": ["1"], "size": 3}, {"name": "b", "nodes": 4, "serves": ["2"]}], "unknown key"),
            ([{"name": "a", "nodes": 6, "serves": ["1"]}, {"name": "b", "nodes": 4, "serves": ["2"],
              "availability": [{"start": 0, "end": 5, "nodes_down": 5}]}], "nodes_down")):
        with pytest.raises(ConfigError, match=msg):
            load(parts)
    with pytest.raises(ConfigError, match="its own calendar"):
        load([{"name": "a", "nodes": 6, "default": True}, {"name": "b", "nodes": 4, "serves": ["2"]}],
             availability=[{"start": 0, "end": 5, "nodes_down": 1}])


def test_unpartitioned_system_is_unchanged():
    # a system without partitions keeps its identity: the same checksum as before partitions had options
    s = System(name="u", title="u", nodes=10)
    assert dataclasses.asdict(s)["partitions"] == ()


def _cfg(**kw):
    return RunConfig(data="parts.swf", **{"policy": "fcfs", "backfill": "easy", "sample_period": 10, **kw})


def test_a_pool_without_jobs_keeps_the_tables_types():
    # the hybrid-like third pool gets no job: the merged table's columns keep their dtypes
    parts = _PARTS + (Partition("empty", 2, ("zzz",)),)
    j = _sim(_JOBS, parts=parts).jobs
    one = simulate(_cfg(), workload=_wl(_JOBS), system=System(name="p", title="p", nodes=12)).jobs
    assert j.dtypes.to_dict() == one.dtypes.to_dict()
    assert j["time_limit_imputed"].dtype == bool and not j["time_limit_imputed"].any()


def test_a_recorded_placement_is_read_in_the_pools_own_numbering():
    # jobs running at the window start (t = 50) on recorded nodes: thin [2, 3] and fat [8, 9]
    # (machine-wide); each is placed where the log had it, with no fallback
    jobs = [dict(submit=0, start=0, run=200, limit=300, nodes=2, partition="1", node_ids=[2, 3]),
            dict(submit=0, start=0, run=200, limit=300, nodes=2, partition="2", node_ids=[8, 9]),
            dict(submit=60, run=10, limit=10, nodes=2, partition="2")]
    system = System(name="p", title="p", nodes=10, partitions=_PARTS)
    res = simulate(_cfg(start=50, duration=500), workload=_wl(jobs), system=system)
    j = res.jobs
    assert [list(x) for x in j["node_ids"][:2]] == [[2, 3], [8, 9]]
    assert res.stats["counts"]["placement_fallbacks"] == 0
    assert list(j["node_ids"][2]) == [6, 7]  # the fat pool's two free nodes


def test_a_job_wider_than_its_pool_names_the_partition():
    jobs = [dict(submit=0, run=10, limit=10, nodes=5, partition="2"),  # fat has 4 nodes, the machine 10
            dict(submit=0, run=10, limit=10, nodes=1, partition="1")]
    j = _sim(jobs).jobs
    assert j["status"][0] == "rejected" and "partition 'fat' has 4" in j["reason"][0]


def test_calendar_of_a_pool_that_ran_out_of_jobs_counts_until_the_machines_end():
    # pool a: 2 of its 6 nodes down on [0, 1000); its only job ends at 100; pool b runs until 500:
    # the machine's run lasts until 500, and a's 2 nodes are down all that time
    parts = (Partition("thin", 6, ("1",), True, ((0, 1000, 2),)), Partition("fat", 4, ("large",)))
    jobs = [dict(submit=0, run=100, limit=100, nodes=2, partition="1"),
            dict(submit=0, run=500, limit=500, nodes=2, partition="2")]
    res = _sim(jobs, parts=parts)
    assert res.stats["counts"]["availability_down_node_s"] == 2 * 500
    # in a closed window the machine runs to the window's end: 2 nodes down on [0, 1000)
    system = System(name="p", title="p", nodes=10, partitions=parts)
    res = simulate(_cfg(start=0, duration=2000), workload=_wl(jobs), system=system)
    assert res.stats["counts"]["availability_down_node_s"] == 2 * 1000
    # a period that starts after the pool's last job still takes its nodes: 3 of fat's down on [200, 400)
    parts2 = (Partition("thin", 6, ("1",), True), Partition("fat", 4, ("large",), False, ((200, 400, 3),)))
    jobs2 = [dict(submit=0, run=600, limit=600, nodes=2, partition="1"),
             dict(submit=0, run=100, limit=100, nodes=2, partition="2")]
    for win in (dict(), dict(start=0, duration=2000)):
        res = simulate(_cfg(**win), workload=_wl(jobs2), system=System(name="p", title="p", nodes=10, partitions=parts2))
        assert res.stats["counts"]["availability_down_node_s"] == 3 * 200, win


def test_each_pool_counts_nodes_and_power_in_its_own_node_type():
    # the fat pool's nodes have 4 cores and 2 sockets: a job of 8 processors takes 2 of its nodes
    # (it would take 8 of the thin pool's 1-core nodes), each drawing the 2-socket node's power
    from twinsweep.core.system import PowerModel

    parts = (Partition("thin", 6, ("1",), True), Partition("fat", 4, ("large",), cores_per_node=4, cpus_per_node=2))
    jobs = [dict(submit=0, run=100, limit=100, nodes=8, partition="2"),
            dict(submit=0, run=100, limit=100, nodes=3, partition="1")]
    res = _sim(jobs, parts=parts, power=PowerModel(cpu_idle_w=10.0, cpu_max_w=10.0, default_cpu_util=1.0))
    j = res.jobs
    assert j["nodes"].tolist() == [2, 3] and j["start_time"].tolist() == [0, 0]
    assert j["avg_power_w"].tolist() == [2 * 20.0, 3 * 10.0]
    # idle nodes: 2 fat at 20 W, 3 thin at 10 W; busy: 40 + 30 W
    assert res.timeline["it_power_w"].iloc[0] == 40 + 30 + 2 * 20 + 3 * 10


def test_a_fair_share_given_in_weights_is_warned_of():
    res = _sim(_JOBS, policy="weighted")
    assert not any("fair share" in w for w in res.manifest.get("warnings", []))
    system = System(name="p", title="p", nodes=10, partitions=_PARTS)
    for opts in ((("w_fairshare", 1.0),), (("weights", "fairshare=1"),)):
        r = simulate(_cfg(policy="weighted", options=opts), workload=_wl(_JOBS), system=system)
        assert any("fair share counts each partition's usage apart" in w for w in r.manifest["warnings"]), opts


def test_replay_ignores_the_partitions_even_when_it_grows_the_machine():
    # the log ran 12 nodes at once on the 10-node machine; replay_oversubscribe follows it
    jobs = [dict(submit=0, start=0, run=50, limit=50, nodes=6, partition="1"),
            dict(submit=0, start=0, run=50, limit=50, nodes=6, partition="2")]
    system = System(name="p", title="p", nodes=10, partitions=_PARTS)
    from twinsweep.core.run import ReplayOversubscribedWarning

    with pytest.warns(ReplayOversubscribedWarning, match="peak 12 nodes"):
        res = simulate(_cfg(policy="replay", backfill="none", options=(("replay_oversubscribe", True),)),
                       workload=_wl(jobs), system=system)
    assert res.jobs["start_time"].tolist() == [0, 0]


def test_partition_errors_name_the_file_and_a_value_served_twice_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"^x\.toml: .*must add up"):
        system_from_dict({"system": {"name": "x", "nodes": 10, "partitions": [
            {"name": "a", "nodes": 6, "default": True}, {"name": "b", "nodes": 3, "serves": ["2"]}]}}, "x.toml")
    # code 2 is named "large" by the header: serving "2" in one pool and "large" in another is ambiguous
    parts = (Partition("thin", 6, ("2",), True), Partition("fat", 4, ("large",)))
    with pytest.raises(ConfigError, match=r"'2' \(large\) is served by 2 partitions"):
        _sim(_JOBS, parts=parts)


def test_a_sweep_refuses_a_partitioned_dataset_before_any_run(tmp_path):
    from twin_helpers import write_swf_rows
    from twinsweep.sweep.expand import load_datasets
    from twinsweep.sweep.spec import load_spec

    log = write_swf_rows(tmp_path / "t.swf", [(1, 0, 0, 10, 2), (2, 5, 0, 10, 2)], max_nodes=10,
                         partitions=[1, 7], header=("; Partition: 1 small",))
    (tmp_path / "s.toml").write_text('[system]\nname = "s"\nnodes = 10\n'
                                     '[[system.partitions]]\nname = "a"\nnodes = 10\nserves = ["small"]\n')
    study = ('[study]\nname = "x"\noutput = "out"\nseeds = 1\n[[datasets]]\nname = "d"\n'
             f'trace = "{log}"\nsystem = "{tmp_path / "s.toml"}"\nwindows = [{{ name = "all" }}]\n[grid]\n')
    (tmp_path / "bad.toml").write_text(study + 'policy = ["fcfs"]\nbackfill = ["easy"]\n')
    with pytest.raises(ConfigError, match=r"dataset 'd': .*values: 7: 1 job;"):
        load_datasets(load_spec(tmp_path / "bad.toml"))
    # served: an external scheduler on it is refused before any run
    (tmp_path / "s.toml").write_text('[system]\nname = "s"\nnodes = 10\n[[system.partitions]]\nname = "a"\n'
                                     'nodes = 10\nserves = ["small"]\ndefault = true\n')
    (tmp_path / "ext.toml").write_text(study + 'policy = ["external"]\nbackfill = ["none"]\n'
                                       'scheduler = ["python studies/schedulers/fcfs_easy.py"]\n')
    with pytest.raises(ConfigError, match=r"policy 'external' speaks for one machine.*'d'"):
        load_datasets(load_spec(tmp_path / "ext.toml"))


def test_replay_counts_each_job_in_its_pools_node_type_and_traces_use_their_pools():
    # replay runs the machine as one pool, but an 8-processor job of the fat pool (4 cores, 2
    # sockets per node) still takes 2 nodes at the 2-socket power, as in a rescheduled run; an
    # idle node draws the mean idle power of the machine's nodes: (6 x 10 + 4 x 20) / 10 = 14 W
    from twinsweep.core.system import PowerModel

    parts = (Partition("thin", 6, ("1",), True), Partition("fat", 4, ("large",), cores_per_node=4, cpus_per_node=2))
    power = PowerModel(cpu_idle_w=10.0, cpu_max_w=10.0, default_cpu_util=1.0)
    system = System(name="p", title="p", nodes=10, partitions=parts, power=power)
    jobs = [dict(submit=0, start=0, run=100, limit=100, nodes=8, partition="2")]
    rep = simulate(_cfg(policy="replay", backfill="none"), workload=_wl(jobs), system=system)
    assert rep.jobs["nodes"].tolist() == [2] and rep.jobs["avg_power_w"].tolist() == [2 * 20.0]
    assert rep.timeline["it_power_w"].iloc[0] == pytest.approx(2 * 20.0 + 8 * 14.0)
    fcfs = simulate(_cfg(), workload=_wl(jobs), system=system)
    assert fcfs.timeline["it_power_w"].iloc[0] == pytest.approx(2 * 20.0 + 2 * 20.0 + 6 * 10.0)
    # utilisation samples are read through the job's own pool's node model (2 sockets on fat)
    wl = _wl(jobs)
    wl = dataclasses.replace(wl, traces={"0": {"period": 50, "cpu_util": np.array([1.0, 1.0])}})
    j = simulate(_cfg(), workload=wl, system=system).jobs
    assert j["nodes"].tolist() == [2] and j["energy_j"].tolist() == [2 * 20.0 * 100]


def test_machine_size_and_cooling_count_every_node_type():
    from twinsweep.core.cooling.model import peak_heat_w
    from twinsweep.core.system import PowerModel, header_mismatch

    power = PowerModel(cpu_idle_w=10.0, cpu_max_w=10.0)
    parts = (Partition("thin", 6, ("1",), True), Partition("fat", 4, ("large",), cores_per_node=4, cpus_per_node=2))
    system = System(name="p", title="p", nodes=10, partitions=parts, power=power)
    assert system.processors == 6 + 16
    # peak IT power: 6 nodes of 1 socket + 4 nodes of 2 sockets, at 10 W a socket (no losses)
    assert peak_heat_w(system) == pytest.approx(6 * 10.0 + 4 * 20.0)
    assert header_mismatch(system, {"MaxProcs": "22", "MaxNodes": "10"}, "cores", "t.swf") is None
    assert "MaxProcs" in (header_mismatch(system, {"MaxProcs": "10", "MaxNodes": "10"}, "cores", "t.swf") or "")


def test_a_served_value_no_job_has_is_warned_of(tmp_path):
    # "gpus" is misspelt: the trace's gpu jobs (code 2, named gpu) go to the default pool; said
    from twin_helpers import write_swf_rows
    from twinsweep.core.run import load_run_inputs

    log = write_swf_rows(tmp_path / "t.swf", [(1, 0, 0, 10, 2), (2, 5, 0, 10, 2)], max_nodes=10,
                         partitions=[1, 2], header=("; Partition: 1 cpu", "; Partition: 2 gpu"))
    sysfile = tmp_path / "s.toml"
    sysfile.write_text('[system]\nname = "s"\nnodes = 10\n[[system.partitions]]\nname = "cpu"\nnodes = 8\n'
                       'serves = ["cpu"]\ndefault = true\n[[system.partitions]]\nname = "gpu"\nnodes = 2\n'
                       'serves = ["gpus"]\n')
    wl, _ = load_run_inputs(RunConfig(data=str(log), system=str(sysfile)))
    assert any("serves 'gpus', which no job of the trace has (its partition values: 1 (cpu): 1 job, "
               "2 (gpu): 1 job); jobs of a misspelt value run on the default partition 'cpu'" in w
               for w in wl.warnings)


def test_a_misspelt_table_of_a_system_file_is_an_error():
    for doc, what in (({"system": {"name": "x", "nodes": 4}, "powr": {"cpu_max_w": 1.0}}, "powr"),
                      ({"system": {"name": "x", "nodes": 4}, "partitions": [{"name": "a", "nodes": 4}]}, "partitions")):
        with pytest.raises(ConfigError, match=rf"x\.toml: unknown table\(s\) \['{what}'\]"):
            system_from_dict(doc, "x.toml")
    with pytest.raises(ConfigError, match=r"unknown key\(s\) in \[system\]: \['partition'\]; allowed: .*'partitions'"):
        system_from_dict({"system": {"name": "x", "nodes": 4, "partition": [{"name": "a", "nodes": 4}]}}, "x.toml")
    with pytest.raises(ConfigError, match=r"\[\[system.partitions\]\]\[1\] \('b'\): unknown key"):
        system_from_dict({"system": {"name": "x", "nodes": 4, "partitions": [
            {"name": "a", "nodes": 2, "default": True}, {"name": "b", "nodes": 2, "size": 1}]}}, "x.toml")


def test_the_reports_power_section_describes_a_partitioned_machine(tmp_path):
    from twinsweep.sweep.expand import LoadedDataset
    from twinsweep.sweep.report import _Page, _section_power
    from twinsweep.sweep.spec import Dataset

    parts = (Partition("thin", 6, ("1",), True), Partition("fat", 4, ("large",), cores_per_node=4, cpus_per_node=2))
    system = System(name="p", title="p", nodes=10, partitions=parts)
    desc = LoadedDataset(Dataset(name="d", trace="parts.swf"), _wl(_JOBS), system, "parts.swf", "p", []).describe()
    pg = _Page(tmp_path)
    _section_power(pg, {"d": desc})
    text = pg.html("t")
    assert "thin: 6 nodes x 1 cores, 1 CPUs (serves 1; the default); fat: 4 nodes x 4 cores, 2 CPUs (serves large)" in text
