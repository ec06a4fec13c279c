"""Named facility systems: one node at idle and at full load, with its losses, checked by hand against
the parameters in each file; whole-system idle/peak power against ExaDigiT/RAPS's own runs."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from conftest import data_path
from twinsweep.core.errors import ConfigError
from twinsweep.core.power import convert, idle_node_power_w, it_equipment_power, node_power_w, power_breakdown
from twinsweep.core.system import load_system, system_from_dict

#: system -> (node DC idle W, node DC full W, node converter (c, eta)), worked out by hand:
HAND = {
    # 1 CPU 90..280, 4 GPU 88..560, mem 74.26, NIC 4 x 20, NVMe 30
    "frontier": (90 + 4 * 88 + 74.26 + 80 + 30, 280 + 4 * 560 + 74.26 + 80 + 30, (13.0, 0.98)),
    # 2 CPU 47.25..252, 4 GPU 75..300, mem 74.26, NIC 2 x 21, NVMe 45, no losses
    "marconi100": (2 * 47.25 + 4 * 75 + 74.26 + 42 + 45, 2 * 252 + 4 * 300 + 74.26 + 42 + 45, (0.0, 1.0)),
    # as Marconi100 but NIC 2 x 10 W (idle NIC power)
    "lassen": (2 * 47.25 + 4 * 75 + 74.26 + 20 + 45, 2 * 252 + 4 * 300 + 74.26 + 20 + 45, (0.0, 1.0)),
    # 1 CPU 90..280, 8 GCD 44..238, mem 37.13, NIC 4 x 20
    "adastra-mi250": (90 + 8 * 44 + 37.13 + 80, 280 + 8 * 238 + 37.13 + 80, (13.0, 0.98)),
    # A64FX 30..150, mem 10
    "fugaku": (30 + 10, 150 + 10, (13.0, 0.98)),
    # 2 CPU 47.25..300, 6 GPU 75..300, mem 74.26, NIC 2 x 21, NVMe 45
    "summit": (2 * 47.25 + 6 * 75 + 74.26 + 42 + 45, 2 * 300 + 6 * 300 + 74.26 + 42 + 45, (13.0, 0.98)),
    # KNL 50..215, mem 25, NIC 15, other 30
    "alcf-theta": (50 + 25 + 15 + 30, 215 + 25 + 15 + 30, (5.0, 0.94)),
    # per core slot: CPU 2.5..12, mem 0.6, NIC 0.4, other 3
    "eurora": (2.5 + 0.6 + 0.4 + 3.0, 12.0 + 0.6 + 0.4 + 3.0, (0.0, 0.95)),
}

#: RAPS's node power including the per-node SIVOC (raps_system_configs_summary.csv, 3 decimals)
RAPS_NODE = {
    "frontier": (652.306, 2772.714), "marconi100": (555.76, 1865.26), "adastra-mi250": (583.806, 2361.357),
    "fugaku": (54.082, 176.531), "summit": (733.429, 2626.796), "lassen": (533.76, None),
}


@pytest.mark.parametrize("name", sorted(HAND))
def test_one_node_idle_and_full_load_with_losses(name):
    s = load_system(name)
    idle, full, (c, eta) = HAND[name]
    assert idle_node_power_w(s) == pytest.approx(idle, abs=1e-9)
    assert node_power_w(s.power, s.cpus_per_node, s.gpus_per_node, 1.0, 1.0) == pytest.approx(full, abs=1e-9)
    nc = s.power.node_converter
    assert (nc.c_w, nc.eta) == (c, eta)
    # the node's converter output -> input, (P + c) / eta, never P * eta
    for p in (idle, full):
        one = (p + c) / eta
        assert power_breakdown(s, p * s.nodes)["node_converter_loss_w"] == pytest.approx((one - p) * s.nodes)
    if name in RAPS_NODE:
        ri, rf = RAPS_NODE[name]
        assert (idle + c) / eta == pytest.approx(ri, abs=5e-4)
        if rf is not None:
            assert (full + c) / eta == pytest.approx(rf, abs=5e-4)


def test_frontier_whole_chain_by_hand():
    s = load_system("frontier")
    p = 626.26 * 9472
    node_in = (p + 9472 * 13) / 0.98
    rect_in = (node_in + 2368 * 250 + 2368 * 17) / 0.96
    total = rect_in + 25 * 8473.47
    b = power_breakdown(s, p)
    assert b["input_w"] == pytest.approx(total)
    assert b["switch_w"] == 2368 * 250 and b["cdu_w"] == pytest.approx(25 * 8473.47)
    assert b["rectifier_loss_w"] == pytest.approx(rect_in - node_in - 2368 * 250)
    fac, loss = convert(s, p)
    assert fac == pytest.approx(total) and loss == pytest.approx(total - p)
    # PUE's IT equipment power: the rectifiers sit in the cabinets (it_meter default), the CDUs are cooling
    assert s.power.it_meter == "rectifier_input"
    assert b["it_equipment_w"] == pytest.approx(rect_in) == it_equipment_power(s, p)


def test_a_room_ups_is_facility_overhead_in_pue():
    """KTH SP2 (100 nodes; node converters 10 W / 0.72 per node, a UPS at 0.92 for every 16 nodes,
    no switches or CDUs): the IT equipment power is the node converters' input, not the UPS's; the
    arrays map element by element, and a bad ``it_meter`` names the key and both allowed values."""
    s = load_system("kth-sp2")
    assert s.power.it_meter == "rectifier_output"
    p = 150.0 * 100
    node_in = (p + 100 * 10.0) / 0.72
    assert it_equipment_power(s, p) == pytest.approx(node_in)
    assert convert(s, p)[0] == pytest.approx(node_in / 0.92)  # the facility draws the UPS's losses too
    assert power_breakdown(s, p)["it_equipment_w"] == pytest.approx(node_in)
    arr = it_equipment_power(s, np.array([0.0, p]))
    assert arr.shape == (2,) and arr[1] == pytest.approx(node_in) and arr[0] == pytest.approx(1000.0 / 0.72)
    doc = {"system": {"name": "x", "nodes": 4}, "power": {"it_meter": "ups"}}
    with pytest.raises(ConfigError, match=r"\[power\]: it_meter must be one of 'rectifier_input', "
                                          r"'rectifier_output'.*got 'ups'"):
        system_from_dict(doc, "x.toml")


def test_every_system_whose_sources_name_a_ups_meters_it_at_the_ups_output():
    """The systems file by file: a rectifier stage described as a UPS in its [[sources]] is metered
    at its output (facility overhead); every other keeps the cabinet rectifiers' default."""
    from twinsweep.core.system import SYSTEMS_DIR

    for path in sorted(SYSTEMS_DIR.glob("*.toml")):
        s = load_system(path.stem)
        ups = any("rectifier" in src.get("what", "") and "UPS" in src.get("cite", "") for src in s.sources)
        assert s.power.it_meter == ("rectifier_output" if ups else "rectifier_input"), path.name


def test_system_power_matches_raps_reference_runs():
    ref = {}
    with open(data_path("raps-samples/idle_peak_system_power_reference.csv")) as fh:
        for r in csv.DictReader(fh):
            ref[(r["system"], r["workload"])] = float(r["avg_power_MW"]) * 1e6
    names = {"frontier": "frontier", "marconi100": "marconi100", "lassen": "lassen", "adastraMI250": "adastra-mi250",
             "fugaku": "fugaku"}
    for raps, ours in names.items():
        s = load_system(ours)
        idle = idle_node_power_w(s) * s.nodes
        peak = node_power_w(s.power, s.cpus_per_node, s.gpus_per_node, 1.0, 1.0) * s.nodes
        assert convert(s, idle)[0] == pytest.approx(ref[(raps, "idle")], abs=60.0), raps  # CSV has 0.1 kW
        assert convert(s, peak)[0] == pytest.approx(ref[(raps, "peak")], abs=60.0), raps


def test_unavailable_nodes_are_validated_and_unpowered():
    f = load_system("frontier")
    assert f.installed_nodes == 9600 and len(f.unavailable_nodes) == 128 and f.unavailable_nodes[0] == 5248
    a = load_system("adastra-mi250")
    assert a.unavailable_nodes == tuple(range(356, 384)) and a.nodes == 356
    doc = {"system": {"name": "x", "nodes": 10, "installed_nodes": 12, "unavailable_nodes": [3]}}
    with pytest.raises(ConfigError, match="must equal nodes"):
        system_from_dict(doc)
    doc["system"]["unavailable_nodes"] = [3, [10, 11]]
    doc["system"]["installed_nodes"] = 13
    s = system_from_dict(doc)
    assert s.unavailable_nodes == (3, 10, 11)
    doc["system"]["unavailable_nodes"] = [3, 3]
    doc["system"]["installed_nodes"] = 12
    with pytest.raises(ConfigError):
        system_from_dict(doc)
    doc["system"]["unavailable_nodes"] = ["a"]
    with pytest.raises(ConfigError, match="neither an int"):
        system_from_dict(doc)


def test_converter_units_and_constant_parts():
    doc = {"system": {"name": "y", "nodes": 10},
           "power": {"cpu_idle_w": 10.0, "cpu_max_w": 20.0, "rectifier": {"units": 3, "c_w": 2.0, "eta": 0.5},
                     "switches": 2, "switch_w": 5.0, "cdus": 1, "cdu_w": 7.0}}
    s = system_from_dict(doc)
    # rectifier: (100 + 2 x 5 + 3 x 2) / 0.5 = 232, + CDU 7
    assert convert(s, 100.0)[0] == pytest.approx(239.0)
    with pytest.raises(ConfigError, match="units"):
        system_from_dict({"system": {"name": "z", "nodes": 1}, "power": {"rectifier": {"units": 0}}})
    with pytest.raises(ConfigError, match="unknown key"):
        system_from_dict({"system": {"name": "z", "nodes": 1}, "power": {"rectifier": {"groups": 2}}})


def test_old_systems_unchanged():
    """Systems without the new keys convert exactly as before: (P + N c_n)/eta_n then groups."""
    s = load_system("kth-sp2")
    p = 12345.0
    nc, rc = s.power.node_converter, s.power.rectifier
    g_r = math.ceil(s.nodes / rc.nodes_per_group)
    expect = ((p + s.nodes * nc.c_w) / nc.eta + g_r * rc.c_w) / rc.eta
    assert convert(s, p)[0] == pytest.approx(expect)
