"""Systems as data: one TOML file per machine under ``core/systems/`` (DESIGN.md §2).

File layout (units: W, s; every number may carry a source in ``[[sources]]``)::

    [system]
    name = "sdsc-sp2"                 # lower-case, the name used by --system
    title = "SDSC IBM SP2"
    nodes = 128                       # schedulable nodes
    cores_per_node = 1                # processors per node *as counted in the trace*
    cpus_per_node = 1                 # CPU sockets per node (power model)
    gpus_per_node = 0
    default_time_limit = 64800        # s, optional: for jobs without a usable limit
    traces = ["SDSC-SP2-1998-4.2-cln.swf.gz"]   # trace file names this system is for
    # optional (facility systems):
    # installed_nodes = 9600          # node positions of the layout (>= nodes)
    # unavailable_nodes = [[5248, 5375]]  # 0-based positions known to be unavailable (missing
    #                                 # racks, down nodes): ints or [first, last] ranges; then
    #                                 # installed_nodes - len(unavailable_nodes) must equal nodes
    # timezone = "Europe/Rome"        # IANA zone of the site's local timestamps (loaders)
    # [[system.partitions]] name = "fat"  nodes = 720  serves = ["large"]  default = false
    #                                 # optional: disjoint node pools, each scheduled on its own,
    #                                 # nodes adding up to [system] nodes (core/partitions.py)

    [power]
    status = "assumed"                # "assumed" (comparable hardware) or "published"
    cpu_idle_w = 20.0                 # per CPU socket
    cpu_max_w = 95.0
    gpu_idle_w = 0.0                  # per GPU
    gpu_max_w = 0.0
    mem_w = 10.0                      # per node, constant
    nic_w = 5.0
    storage_w = 0.0
    other_w = 30.0                    # fans, board, ... per node, constant
    default_cpu_util = 0.9            # when the trace gives no utilisation
    default_gpu_util = 0.0
    node_converter = { c_w = 0.0, eta = 0.93 }            # per node: P_in = (P + c) / eta
    rectifier = { nodes_per_group = 32, c_w = 0.0, eta = 0.96 }   # per group of nodes
    # a converter may give ``units`` (how many converter units there are) instead of deriving
    # them as ceil(nodes / nodes_per_group), e.g. rectifier = { units = 2368, c_w = 17, eta = 0.96 }
    # switches = 2368                 # network switches behind the rectifiers (optional)
    # switch_w = 250.0                # W per switch, constant
    # cdus = 25                       # coolant distribution units (optional)
    # cdu_w = 8473.47                 # W per CDU, constant, added after the rectifiers
    # it_meter = "rectifier_input"    # where PUE's IT equipment power is metered: "rectifier_input"
                                      # (rectifiers in the IT cabinets, as HPE Cray EX; the default) or
                                      # "rectifier_output" (the rectifier stage is a room UPS: facility)

    [cooling]                         # optional: cooling plant (docs/cooling.md, core/cooling/);
    status = "assumed"                # any key not given comes from the generic warm-water plant
    design_heat_w = 2.0e5             # sized for the system's peak IT input power
    # [cooling.fmu_variables] heat_w = "Q_IT" ...   (with fmu = "plant.fmu": an FMU replaces the model)

    [[sources]]
    what = "cpu_idle_w, cpu_max_w"
    cite = "…paper / vendor sheet / dataset documentation…"

Node power (DESIGN.md §4) = other + mem + nic + storage + cpus·(cpu_idle + u_cpu·(cpu_max − cpu_idle))
+ gpus·(gpu_idle + u_gpu·(gpu_max − gpu_idle)); losses are applied by :mod:`core.power`.

Facility chain (:func:`core.power.convert`): node DC power → per-node converters
``(P + G_n·c_n)/η_n`` → plus the switches' power (they sit behind the rectifiers, as in
ExaDigiT/RAPS) → rectifiers ``(· + G_r·c_r)/η_r`` → plus the CDUs' power. Unavailable nodes
are not powered (RAPS sets their power to zero), so every per-node quantity counts ``nodes``.

PUE's IT equipment power (:func:`core.power.it_equipment_power`; The Green Grid, "PUE: a
comprehensive examination of the metric", White Paper 49, 2012: IT equipment energy is metered at
the IT equipment's input, and UPS losses and cooling — CDU pumps included — are facility overhead)
is the rectifiers' input when they are part of the IT cabinets (``it_meter = "rectifier_input"``,
the default: ExaDigiT/RAPS's per-chassis rectifiers) or their output when the rectifier stage is a
room UPS (``it_meter = "rectifier_output"``: the assumed 1990s–2010s machines whose sources name a
UPS); the CDUs' power is never IT.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import tomllib
from pathlib import Path
from typing import Any

from .durations import parse_human_duration
from .errors import ConfigError, UnknownNameError

SYSTEMS_DIR = Path(__file__).with_name("systems")


@dataclasses.dataclass(frozen=True)
class Converter:
    """An affine power converter: ``P_in = (P_out + c_w) / eta`` (DESIGN.md §4).

    ``nodes_per_group``: how many nodes share one converter (1 = per node).
    ``units``: the number of converter units when it is not ``ceil(nodes / nodes_per_group)``
    (e.g. RAPS's 4 rectifiers per chassis on Fugaku, 11.5 nodes per rectifier); None = derived.
    """

    c_w: float = 0.0
    eta: float = 1.0
    nodes_per_group: int = 1
    units: int | None = None

    def __post_init__(self):
        if not (0.0 < self.eta <= 1.0):
            raise ConfigError(f"converter eta must be in (0, 1], got {self.eta}")
        if self.c_w < 0 or self.nodes_per_group < 1:
            raise ConfigError(f"converter c_w must be >= 0 and nodes_per_group >= 1, got {self}")
        if self.units is not None and int(self.units) < 1:
            raise ConfigError(f"converter units must be >= 1 when given, got {self.units}")

    def count(self, nodes: int) -> int:
        """Number of converter units serving ``nodes`` nodes (``units`` when given)."""
        if self.units is not None:
            return int(self.units)
        return -(-int(nodes) // int(self.nodes_per_group))


#: Where PUE's IT equipment power is metered (:attr:`PowerModel.it_meter`; module docstring).
IT_METERS = ("rectifier_input", "rectifier_output")


@dataclasses.dataclass(frozen=True)
class PowerModel:
    """Per-node power parameters (W) and conversion losses; see the module docstring."""

    status: str = "assumed"
    cpu_idle_w: float = 0.0
    cpu_max_w: float = 0.0
    gpu_idle_w: float = 0.0
    gpu_max_w: float = 0.0
    mem_w: float = 0.0
    nic_w: float = 0.0
    storage_w: float = 0.0
    other_w: float = 0.0
    default_cpu_util: float = 1.0
    default_gpu_util: float = 0.0
    node_converter: Converter = Converter()
    rectifier: Converter = Converter()
    switches: int = 0  # network switches behind the rectifiers (whole system)
    switch_w: float = 0.0  # W per switch, constant
    cdus: int = 0  # coolant distribution units (whole system)
    cdu_w: float = 0.0  # W per CDU, constant, added after the rectifiers
    it_meter: str = "rectifier_input"  # PUE's IT equipment power: "rectifier_input" or "rectifier_output"

    def __post_init__(self):
        """Raises ConfigError naming the key: a power (``*_w``) that is negative or not a finite
        number, a ``*_max_w`` below its ``*_idle_w`` (a busy device drawing less than an idle one
        would make the model's power fall with load), a default utilisation outside 0..1, or a
        negative switch / CDU count, an ``it_meter`` other than ``"rectifier_input"`` /
        ``"rectifier_output"``."""
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name.endswith("_w") and not (isinstance(v, (int, float)) and not isinstance(v, bool)
                                              and math.isfinite(v) and v >= 0):
                raise ConfigError(f"{f.name} must be a finite number of watts >= 0, got {v!r}")
        for dev in ("cpu", "gpu"):
            idle, peak = getattr(self, f"{dev}_idle_w"), getattr(self, f"{dev}_max_w")
            if peak < idle:
                raise ConfigError(f"{dev}_max_w ({peak:g} W) is below {dev}_idle_w ({idle:g} W): the power at full "
                                  "load must be at least the idle power")
        for k in ("default_cpu_util", "default_gpu_util"):
            v = getattr(self, k)
            if not (isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0):
                raise ConfigError(f"{k} must be a utilisation in 0..1, got {v!r}")
        for k in ("switches", "cdus"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ConfigError(f"{k} must be a whole number >= 0, got {v!r}")
        if self.it_meter not in IT_METERS:
            raise ConfigError(f"it_meter must be one of {', '.join(map(repr, IT_METERS))} (where PUE's IT equipment "
                              f"power is metered), got {self.it_meter!r}")

    @property
    def assumed(self) -> bool:
        """True when the parameters come from comparable hardware, not the machine itself."""
        return self.status != "published"


@dataclasses.dataclass(frozen=True)
class Partition:
    """A disjoint node pool of a partitioned machine (``[[system.partitions]]``; :mod:`core.partitions`).

    ``nodes``: its nodes (the partitions' add up to the system's); ``serves``: the trace's
    partition values it runs (codes, or the names an SWF header gives them); ``default``: it also
    runs the jobs no partition serves; ``availability``: its own node availability calendar,
    ``(start, end, nodes_down)`` periods as :attr:`System.availability`; ``cores_per_node``,
    ``cpus_per_node``, ``gpus_per_node``: its node type, when it differs from the system's
    (None: the system's) — a job's nodes are counted in its pool's cores per node, and its power
    from its pool's sockets and GPUs.
    """

    name: str
    nodes: int
    serves: tuple[str, ...] = ()
    default: bool = False
    availability: tuple[tuple[int, int, int], ...] = ()
    cores_per_node: int | None = None
    cpus_per_node: int | None = None
    gpus_per_node: int | None = None

    def node_kind(self, cores: int, cpus: int, gpus: int) -> dict[str, int]:
        """``{cores_per_node, cpus_per_node, gpus_per_node}`` of this pool's nodes: its own where
        it gives one, else the machine's (``cores``, ``cpus``, ``gpus``) — the one rule every
        reader of a pool's node type follows."""
        return {k: v if (own := getattr(self, k)) is None else own
                for k, v in zip(NODE_TYPE_KEYS, (cores, cpus, gpus))}


#: The keys of a node type: a partition may give its own (:meth:`Partition.node_kind`).
NODE_TYPE_KEYS = ("cores_per_node", "cpus_per_node", "gpus_per_node")


@dataclasses.dataclass(frozen=True)
class System:
    """A machine: nodes, processors per node, partitions, power model and the sources cited.

    ``path`` is the TOML file it came from (None for a generic system built from a trace header).
    """

    name: str
    title: str
    nodes: int
    cores_per_node: int = 1
    cpus_per_node: int = 1
    gpus_per_node: int = 0
    default_time_limit: int | None = None
    partitions: tuple[Partition, ...] = ()
    traces: tuple[str, ...] = ()
    power: PowerModel = PowerModel()
    sources: tuple[dict, ...] = ()
    path: str | None = None
    generic: bool = False
    cooling: Any = None  # core.cooling.CoolingModel from the [cooling] table, or None (generic plant)
    installed_nodes: int | None = None  # node positions of the layout, None = nodes
    unavailable_nodes: tuple[int, ...] = ()  # positions known to be unavailable (not schedulable, unpowered)
    timezone: str | None = None  # IANA zone of the site's local timestamps
    #: node availability calendar: ``(start, end, nodes_down)`` periods (s from the trace epoch,
    #: ``[start, end)``) during which ``nodes_down`` fewer nodes are usable (downtime, drains,
    #: dedicated reservations); see :class:`core.engine.Engine` and docs/validation.md. Empty: off.
    availability: tuple[tuple[int, int, int], ...] = ()
    #: kill grace (s): a job that overruns its time limit is killed this long after it (Slurm's
    #: ``OverTimeLimit``/``KillWait``; 0 = at the limit). Schedulers still plan with the limit.
    kill_grace_s: int = 0
    #: scheduling cycle (s): passes run only at multiples of it (Slurm's ``sched_interval`` /
    #: ``bf_interval``; 0 = a pass at every event, DESIGN.md §3.2). Replay ignores it.
    scheduling_cycle_s: int = 0
    #: jobs cancelled while queued in the log stay queued until their cancel time and leave with
    #: status ``cancelled`` (they can hold an EASY reservation meanwhile); off: they are ``not_run``.
    #: The run option ``queue_cancelled`` overrides it. Reschedule modes only.
    queue_cancelled: bool = False
    #: a job enters the queue at its ``eligible_time`` when the trace gives one later than its
    #: submit time (Slurm's ``Eligible``: the end of a hold, a dependency or a ``--begin`` time);
    #: off: at its submit time. The run option ``honor_eligible`` overrides it. Reschedule modes only.
    honor_eligible: bool = False
    #: the partition this machine is one pool of (:func:`core.partitions.pool_system`), named in
    #: the messages of its run (a job wider than the pool); None for a whole machine.
    pool_name: str | None = None

    def __post_init__(self):
        if self.nodes < 1:
            raise ConfigError(f"system {self.name!r}: nodes must be >= 1, got {self.nodes}")
        if self.cores_per_node < 1:
            raise ConfigError(f"system {self.name!r}: cores_per_node must be >= 1, got {self.cores_per_node}")
        for k in ("kill_grace_s", "scheduling_cycle_s"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ConfigError(f"system {self.name!r}: {k} must be an integer >= 0 s, got {v!r}")
        for k in ("queue_cancelled", "honor_eligible"):
            if not isinstance(getattr(self, k), bool):
                raise ConfigError(f"system {self.name!r}: {k} must be true or false, got {getattr(self, k)!r}")
        if self.installed_nodes is not None or self.unavailable_nodes:
            inst = self.installed_nodes if self.installed_nodes is not None else self.nodes + len(self.unavailable_nodes)
            bad = [i for i in self.unavailable_nodes if not 0 <= int(i) < inst]
            if bad or len(set(self.unavailable_nodes)) != len(self.unavailable_nodes):
                raise ConfigError(f"system {self.name!r}: unavailable_nodes must be distinct positions in "
                                  f"[0, {inst}), got {bad[:5] or 'duplicates'}")
            if inst - len(self.unavailable_nodes) != self.nodes:
                raise ConfigError(
                    f"system {self.name!r}: installed_nodes ({inst}) - unavailable_nodes ({len(self.unavailable_nodes)}) "
                    f"must equal nodes ({self.nodes})")
        if self.partitions:
            self._check_partitions()

    def _check_partitions(self) -> None:
        """A partitioned machine's pools: they add up to ``nodes``, have distinct names, serve
        distinct values, at most one is the default, and each calendar fits its pool; the
        machine-wide calendar is then empty (each pool has its own). Raises ConfigError."""
        ps, where = self.partitions, f"system {self.name!r}: [[system.partitions]]"
        if sum(p.nodes for p in ps) != self.nodes:
            raise ConfigError(f"{where}: the partitions' nodes ({' + '.join(str(p.nodes) for p in ps)} = "
                              f"{sum(p.nodes for p in ps)}) must add up to the system's nodes ({self.nodes})")
        names = [p.name for p in ps]
        if len(set(names)) != len(names):
            raise ConfigError(f"{where}: partition names must be distinct, got {names}")
        if sum(p.default for p in ps) > 1:
            raise ConfigError(f"{where}: at most one partition may be default = true, got "
                              f"{[p.name for p in ps if p.default]}")
        seen: dict[str, str] = {}
        for p in ps:
            if p.nodes < 1:
                raise ConfigError(f"{where}: partition {p.name!r} needs nodes >= 1, got {p.nodes}")
            for k in NODE_TYPE_KEYS:
                v = getattr(p, k)
                if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < (k == "cores_per_node")):
                    raise ConfigError(f"{where}: partition {p.name!r}: {k} must be an integer >= "
                                      f"{int(k == 'cores_per_node')}, got {v!r}")
            if not p.serves and not p.default:
                raise ConfigError(f"{where}: partition {p.name!r} serves nothing: give serves = [...] or default = true")
            for v in p.serves:
                if v in seen:
                    raise ConfigError(f"{where}: the value {v!r} is served by both {seen[v]!r} and {p.name!r}")
                seen[v] = p.name
            bad = [k for _, _, k in p.availability if not 1 <= k <= p.nodes]
            if bad:
                raise ConfigError(f"{where}: partition {p.name!r}: nodes_down must be 1 .. {p.nodes}, got {bad[0]}")
        if self.availability:
            raise ConfigError(f"system {self.name!r}: a partitioned machine gives each partition its own calendar "
                              "(availability = [...] in its [[system.partitions]] table), not one in [system]")

    @property
    def processors(self) -> int:
        """Processors of the machine: nodes × cores per node, summed over its partitions' node
        types when it has partitions (:class:`Partition`)."""
        return sum(n * cores for n, cores, _, _ in self._kinds())

    def node_types(self) -> list[tuple[int, int, int]]:
        """``(nodes, cpus_per_node, gpus_per_node)`` of each node type: the system's, or each
        partition's (its own where it gives one) — what the power model sums over."""
        return [(n, cpus, gpus) for n, _, cpus, gpus in self._kinds()]

    def partitions_summary(self) -> list[dict]:
        """One JSON-able dict per partition, in the file's order: ``name``, ``nodes``, ``serves``
        (list), ``default`` and its node type (``cores_per_node``, ``cpus_per_node``,
        ``gpus_per_node``: its own where it gives one, :meth:`Partition.node_kind`). Empty for an
        unpartitioned system. The one description of the pools a sweep's datasets.json and
        validate's validation.json carry."""
        return [{"name": p.name, "nodes": p.nodes, "serves": list(p.serves), "default": p.default,
                 **p.node_kind(self.cores_per_node, self.cpus_per_node, self.gpus_per_node)}
                for p in self.partitions]

    def _kinds(self) -> list[tuple[int, int, int, int]]:
        """``(nodes, cores, cpus, gpus)`` per node type (:meth:`Partition.node_kind`)."""
        return _node_kinds(self.partitions, self.nodes, self.cores_per_node, self.cpus_per_node, self.gpus_per_node)

    @property
    def power_label(self) -> str:
        """``"assumed"`` or ``"published"``: every output that shows power carries it."""
        return "assumed" if self.power.assumed else "published"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (for manifests and reports)."""
        return dataclasses.asdict(self)

    @functools.cached_property
    def checksum(self) -> str:
        """``"sha256:<hex>"`` of every parameter (not the file path): editing a system file changes
        the identity of the runs that use it."""
        import hashlib
        import json

        d = self.to_dict()
        d.pop("path", None)
        for k in ("availability", "kill_grace_s", "scheduling_cycle_s", "queue_cancelled", "honor_eligible",
                  "pool_name"):  # added later: at their defaults the identity is unchanged
            if not d.get(k):
                d.pop(k, None)
        blob = json.dumps(d, sort_keys=True, default=str, separators=(",", ":")).encode()
        return "sha256:" + hashlib.sha256(blob).hexdigest()


def _converter(d: dict | None, where: str) -> Converter:
    if d is None:
        return Converter()
    unknown = set(d) - {"c_w", "eta", "nodes_per_group", "units"}
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: c_w, eta, nodes_per_group, units")
    units = d.get("units")
    try:
        return Converter(float(d.get("c_w", 0.0)), float(d.get("eta", 1.0)), int(d.get("nodes_per_group", 1)),
                         None if units is None else int(units))
    except (ConfigError, TypeError, ValueError) as e:
        raise ConfigError(f"{where}: {e}") from None


def _node_positions(v, where: str) -> tuple[int, ...]:
    """``unavailable_nodes`` from TOML: ints and ``[first, last]`` inclusive ranges, sorted."""
    out: list[int] = []
    if not isinstance(v, (list, tuple)):
        raise ConfigError(f"{where}: unavailable_nodes must be a list of ints or [first, last] ranges")
    for x in v:
        if isinstance(x, bool):
            raise ConfigError(f"{where}: unavailable_nodes entry {x!r} is not a node position")
        if isinstance(x, int):
            out.append(int(x))
        elif isinstance(x, (list, tuple)) and len(x) == 2 and all(isinstance(y, int) for y in x) and x[0] <= x[1]:
            out.extend(range(int(x[0]), int(x[1]) + 1))
        else:
            raise ConfigError(f"{where}: unavailable_nodes entry {x!r} is neither an int nor a [first, last] range")
    return tuple(sorted(out))


def run_setting(key: str, options: dict, system) -> bool:
    """A machine-model switch of a run (``queue_cancelled``, ``honor_eligible``): the run option
    ``key`` when given (not None), else the system file's (False when the system has none). The
    one rule the engine, ``simulate`` and ``validate`` read such a switch by."""
    v = options.get(key)
    return bool(getattr(system, key, False)) if v is None else bool(v)


def availability_periods(v, nodes: int, where: str) -> tuple[tuple[int, int, int], ...]:
    """The node availability calendar from TOML: a list of tables ``{start, end, nodes_down}``
    (``[[system.availability]]``; times in s from the trace epoch or durations such as ``"30d"``;
    ``[start, end)``), sorted by start. Raises ConfigError naming the entry when a key is missing
    or unknown, ``end <= start``, or ``nodes_down`` is not in ``1..nodes`` (``nodes``: a full outage)."""
    if not isinstance(v, (list, tuple)):
        raise ConfigError(f"{where}: availability must be a list of {{start, end, nodes_down}} tables")
    out = []
    for i, x in enumerate(v):
        w = f"{where}: availability[{i}]"
        if isinstance(x, (list, tuple)) and len(x) == 3:
            x = {"start": x[0], "end": x[1], "nodes_down": x[2]}
        if not isinstance(x, dict) or set(x) != {"start", "end", "nodes_down"}:
            raise ConfigError(f"{w}: expected a table with exactly start, end, nodes_down; got {x!r}")
        a, b = parse_human_duration(x["start"], f"{w}.start"), parse_human_duration(x["end"], f"{w}.end")
        k = x["nodes_down"]
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= nodes:
            raise ConfigError(f"{w}: nodes_down must be an integer in 1..{nodes} (all of them: a full outage, "
                              f"e.g. maintenance), got {k!r}")
        if b <= a:
            raise ConfigError(f"{w}: end ({b}) must be after start ({a})")
        out.append((int(a), int(b), int(k)))
    return tuple(sorted(out))


#: The tables a system file may hold: the machine, its power model and cooling plant, the sources
#: cited, and the site's queue rules (read by ``twinsweep validate``, sweep/validate.py).
_TOP_TABLES = {"system", "power", "cooling", "sources", "site"}

_PARTITION_KEYS = {"name", "nodes", "serves", "default", "availability", *NODE_TYPE_KEYS}


def _node_kinds(partitions, nodes: int, cores: int, cpus: int, gpus: int) -> list[tuple[int, int, int, int]]:
    """``(nodes, cores, cpus, gpus)`` per node type: one of the machine's own, or each partition's."""
    if not partitions:
        return [(nodes, cores, cpus, gpus)]
    return [(p.nodes, *p.node_kind(cores, cpus, gpus).values()) for p in partitions]


def _partitions(parts, where: str) -> tuple[Partition, ...]:
    """``[[system.partitions]]`` tables -> Partitions (checked as a whole by :class:`System`).
    Raises ConfigError naming the partition and key."""
    if not isinstance(parts, list) or not all(isinstance(x, dict) for x in parts):
        raise ConfigError(f"{where}: partitions must be a list of [[system.partitions]] tables")
    out = []
    for i, x in enumerate(parts):
        w = f"{where} [[system.partitions]][{i}]" + (f" ({x['name']!r})" if isinstance(x.get("name"), str) else "")
        if unknown := set(x) - _PARTITION_KEYS:
            raise ConfigError(f"{w}: unknown key(s) {sorted(unknown)}; allowed: {sorted(_PARTITION_KEYS)}")
        for req in ("name", "nodes"):
            if req not in x:
                raise ConfigError(f"{w}: lacks required key {req!r}")
        nodes = x["nodes"]
        if isinstance(nodes, bool) or not isinstance(nodes, int):
            raise ConfigError(f"{w}: nodes must be an integer, got {nodes!r}")
        serves = x.get("serves", [])
        if not isinstance(serves, list) or not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in serves):
            raise ConfigError(f"{w}: serves must be a list of partition codes or names, got {serves!r}")
        default = x.get("default", False)
        if not isinstance(default, bool):
            raise ConfigError(f"{w}: default must be true or false, got {default!r}")
        cal = availability_periods(x["availability"], nodes, w) if "availability" in x else ()
        out.append(Partition(str(x["name"]), nodes, tuple(str(v) for v in serves), default, cal,
                             **{k: x[k] for k in NODE_TYPE_KEYS if k in x}))
    return tuple(out)


_SYSTEM_KEYS = {f.name for f in dataclasses.fields(System)} - {"power", "sources", "path", "generic", "partitions", "cooling",
                                                                 "pool_name"}
_POWER_KEYS = {f.name for f in dataclasses.fields(PowerModel)}


def system_from_dict(doc: dict, path: str | None = None) -> System:
    """Build a System from a parsed TOML document. Raises ConfigError naming the bad key."""
    where = path or "<system>"
    if "system" not in doc:
        raise ConfigError(f"{where}: missing [system] table")
    if unknown := set(doc) - _TOP_TABLES:  # a misspelt [power] would silently draw 0 W
        raise ConfigError(f"{where}: unknown table(s) {sorted(unknown)}; allowed: {sorted(_TOP_TABLES)} "
                          "(partitions go in [[system.partitions]], a calendar in [system] availability)")
    s = dict(doc["system"])
    parts = _partitions(s.pop("partitions", []), where)
    unknown = set(s) - _SYSTEM_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) in [system]: {sorted(unknown)}; allowed: "
                          f"{sorted(_SYSTEM_KEYS | {'partitions'})}")
    for req in ("name", "nodes"):
        if req not in s:
            raise ConfigError(f"{where}: [system] lacks required key {req!r}")
    p = dict(doc.get("power", {}))
    unknown = set(p) - _POWER_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) in [power]: {sorted(unknown)}; allowed: {sorted(_POWER_KEYS)}")
    if p.get("status", "assumed") not in ("assumed", "published"):
        raise ConfigError(f"{where}: [power] status must be 'assumed' or 'published', got {p['status']!r}")
    p["node_converter"] = _converter(p.get("node_converter"), f"{where} [power.node_converter]")
    p["rectifier"] = _converter(p.get("rectifier"), f"{where} [power.rectifier]")
    try:
        power = PowerModel(**p)
    except ConfigError as e:
        raise ConfigError(f"{where} [power]: {e}") from None
    cooling = None
    if "cooling" in doc:  # a [cooling] table: parameters of the cooling plant (core/cooling/)
        from .cooling import cooling_from_table  # the cooling model and its FMU path load only when used
        from .power import peak_input_power_w

        if not isinstance(doc["cooling"], dict):
            raise ConfigError(f"{where}: [cooling] must be a table")
        kinds = [(n, cpus, gpus) for n, _, cpus, gpus in _node_kinds(  # a partitioned machine: each pool's
            parts, int(s["nodes"]), int(s.get("cores_per_node", 1)), int(s.get("cpus_per_node", 1)),
            int(s.get("gpus_per_node", 0)))]
        q_peak = peak_input_power_w(power, int(s["nodes"]), int(s.get("cpus_per_node", 1)),
                                    int(s.get("gpus_per_node", 0)), kinds)
        cooling = cooling_from_table(doc["cooling"], q_peak or None, f"{where} [cooling]",
                                     Path(path).parent if path else None)
    if "unavailable_nodes" in s:
        s["unavailable_nodes"] = _node_positions(s["unavailable_nodes"], f"{where} [system]")
    if "availability" in s:
        s["availability"] = availability_periods(s["availability"], int(s["nodes"]), f"{where} [system]")
    try:
        return System(
            title=s.pop("title", s["name"]),
            partitions=parts,
            traces=tuple(s.pop("traces", ())),
            power=power,
            sources=tuple(doc.get("sources", ())),
            path=path,
            cooling=cooling,
            **s,
        )
    except ConfigError as e:  # the checks of System itself: say which file
        if str(e).startswith(where):
            raise
        raise ConfigError(f"{where}: {e}") from None


def list_systems() -> list[System]:
    """All named systems shipped in ``core/systems/*.toml``, sorted by name."""
    return sorted((load_system(p) for p in SYSTEMS_DIR.glob("*.toml")), key=lambda s: s.name)


def load_system(name_or_path: str | Path) -> System:
    """Load a system by name (``core/systems/<name>.toml``) or by path to a TOML file.

    Raises UnknownNameError listing the valid names, or ConfigError for a malformed file.
    """
    p = Path(name_or_path)
    if p.suffix == ".toml" and not p.exists() and (len(p.parts) > 1 or not (SYSTEMS_DIR / p.name).exists()):
        raise ConfigError(f"system file not found: {p}")
    if not (p.suffix == ".toml" and p.exists()):
        p = SYSTEMS_DIR / f"{str(name_or_path).lower()}.toml"
        if not p.exists():
            raise UnknownNameError("system", str(name_or_path), [q.stem for q in SYSTEMS_DIR.glob("*.toml")])
    try:
        doc = tomllib.loads(p.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{p}: cannot read system file: {exc}") from exc
    return system_from_dict(doc, str(p))


def system_for_trace(source: str) -> System | None:
    """The named system whose ``traces`` list holds this file name, or None (the first by system
    name when several do, as in :func:`list_systems`). Only the system files whose text holds the
    file name are parsed (a ``twinsweep run`` parses one file instead of all of them, ~6 ms of
    its start-up); a file that spelled the name only through TOML escape sequences would not
    be found."""
    base = Path(source).name
    found = []
    for p in SYSTEMS_DIR.glob("*.toml"):
        try:
            if base not in p.read_text():
                continue
        except OSError:
            pass  # unreadable: load_system says why
        s = load_system(p)
        if base in s.traces:
            found.append(s)
    return min(found, key=lambda s: s.name) if found else None


#: Power parameters of the generic system built from an SWF header. Source: SPEC power_ssj2008
#: results for 1-socket servers of the 2008-2012 era average ~ 40-60 W idle and ~ 150-250 W at
#: full load; we take idle 50 W / full 200 W per node (marked assumed).
GENERIC_POWER = PowerModel(
    status="assumed", cpu_idle_w=20.0, cpu_max_w=170.0, other_w=30.0, default_cpu_util=1.0,
    node_converter=Converter(0.0, 0.93, 1), rectifier=Converter(0.0, 0.96, 32),
)


#: A whole number, and a decimal number as SWF headers write them (:func:`header_number`).
_WHOLE_RE = re.compile(r"^[+-]?\d+$")
_DECIMAL_RE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")


def header_number(text: str, first_word: bool = False) -> int | None:
    """An SWF header value as a whole number, or None when it is not one. Accepted: an integer
    (``-1``, ``1500000000``) or a finite integral float (``64.0``, ``1.5e9`` -> 1500000000) of
    magnitude <= 2^53; with ``first_word`` only the first word counts and ``,``/``_`` thousands
    separators are allowed (``1,024``). Anything else (``abc``, ``1.5``, ``12abc``, ``inf``) -> None.
    The one reading of header numbers: :func:`header_count` and the loaders'
    ``core.loaders._swfcore.read_swf_header``."""
    text = text.strip()
    if first_word:
        parts = text.split()
        text = parts[0].replace(",", "").replace("_", "") if parts else ""
    if _WHOLE_RE.match(text):
        return int(text)
    if not _DECIMAL_RE.match(text):
        return None
    x = float(text)
    if not (math.isfinite(x) and x == round(x) and abs(x) <= 2**53):
        return None
    return int(x)


def header_count(header: dict, key: str, source: str = "") -> int | None:
    """An SWF header's size field ``key`` (``MaxNodes``, ``MaxProcs``, ``MaxRuntime``): its first
    word, thousands separators allowed (``1,024``) and ``64.0`` read as 64; None when absent or -1
    (SWF's "unknown"). Raises ConfigError naming ``source`` and the field for any other text, and
    for a field given on several lines with different numbers (``"64\n32"``, as
    ``core.loaders._swfcore.parse_swf_header`` joins repeated keys): never the first one silently.
    The SWF loaders check these fields with the file and line already
    (``core.loaders._swfcore.read_swf_header``); this guards headers built otherwise."""
    v = header.get(key)
    if v is None or not str(v).strip():
        return None
    rows = [ln.split() for ln in str(v).splitlines() if ln.strip()]
    # the first line's first word, and every later line that is one number alone (a repeated
    # value; a continuation line of text such as "352 batch)" is not)
    words = [rows[0][0]] + [r[0] for r in rows[1:] if len(r) == 1]
    nums = {x for w in words if (x := header_number(w, first_word=True)) is not None}
    if len(nums) > 1:
        raise ConfigError(f"{source or 'trace'}: SWF header field {key} is given more than once with different values "
                          f"({', '.join(repr(ln.strip()) for ln in str(v).splitlines() if ln.strip())}); keep the right "
                          "one in the header or pass --system NAME (see `twinsweep systems`)")
    x = header_number(str(v), first_word=True)  # "1,024" as written by people
    if x == -1:  # SWF's "unknown"
        return None
    if x is None or x < 0:
        raise ConfigError(f"{source or 'trace'}: SWF header field {key} is {str(v).strip()!r}, not a whole number >= 0; "
                          "correct the header or pass --system NAME (see `twinsweep systems`)")
    return x


#: How far (relative) a trace header's machine size may be from the system its file name chose
#: before :func:`header_mismatch` warns. Every shipped trace is within 1 % (Theta's job sets: header
#: 4,360 nodes, system 4,392, system file says why).
HEADER_SIZE_TOLERANCE = 0.10


def header_mismatch(system: System, header: dict, procs_unit: str = "cores", source: str = "",
                    chosen_by: str = "its file name") -> str | None:
    """A warning when the system chosen for a trace by its *file name* (:func:`system_for_trace`)
    is not the machine its SWF header describes: the header's ``MaxProcs`` more than
    :data:`HEADER_SIZE_TOLERANCE` away from the system's processors (nodes × cores per node), or,
    without ``MaxProcs`` or for a trace that counts nodes, its ``MaxNodes`` from the system's nodes. None when they agree or the header gives no size (a
    header number that does not parse is no evidence here). A copy of another log saved under a
    catalogued name would otherwise run on the wrong machine, and with its site rules.
    ``chosen_by`` names how the system was chosen, for the text (``"--system"`` when given)."""
    if system.generic:  # built from this very header
        return None
    try:
        procs, nodes = header_count(header, "MaxProcs"), header_count(header, "MaxNodes")
    except ConfigError:
        return None
    if procs and procs_unit == "cores":  # processors against processors
        size, what, have, unit = procs, "MaxProcs", system.processors, "processors"
    else:  # nodes against nodes (a header without MaxProcs, or a trace that counts nodes)
        size, what, have, unit = nodes or procs, "MaxNodes" if nodes else "MaxProcs", system.nodes, "nodes"
    if not size:
        return None
    if abs(size - have) <= HEADER_SIZE_TOLERANCE * have:
        return None
    if chosen_by == "its file name":
        return (f"{Path(source).name or 'the trace'}: its header says {what} {size:,}, but the system its file name "
                f"chose, {system.name}, has {have:,} {unit}: is the file the log its name says? (--system picks the "
                "machine)")
    return (f"{Path(source).name or 'the trace'}: its header says {what} {size:,}, but the system chosen by "
            f"{chosen_by}, {system.name}, has {have:,} {unit}: the figures are of that machine, not the log's")


def system_from_swf_header(header: dict, source: str = "", procs_unit: str = "cores") -> System:
    """A generic system from SWF header fields ``MaxNodes`` / ``MaxProcs`` / ``MaxRuntime``.

    nodes = MaxNodes and cores_per_node = MaxProcs // MaxNodes when both are present and divide;
    when MaxProcs is a larger non-multiple of MaxNodes (nodes of different sizes, e.g. OSC's 32
    quad + 25 dual nodes), MaxProcs one-processor slots (allocation by processor keeps the
    machine's capacity; the generic per-node power then applies per slot); when MaxProcs is
    below MaxNodes, MaxNodes one-processor nodes; with one of them only, that many one-processor nodes; ``procs_unit == "nodes"``
    forces cores_per_node 1. default_time_limit = MaxRuntime. The derivation is the first entry
    of ``sources`` (``what = "nodes, cores_per_node"``).
    Power: :data:`GENERIC_POWER` (assumed). A field is a whole number, thousands separators
    allowed (``1,024``, ``64.0``); 0 counts as not given. Raises ConfigError when the header has
    neither field (or only zeros), or when one is not a whole number >= 0.
    """

    max_nodes, max_procs = header_count(header, "MaxNodes", source), header_count(header, "MaxProcs", source)
    nodes = max_nodes or max_procs
    if not nodes:
        given = [f"{k} {header[k]}" for k in ("MaxNodes", "MaxProcs") if k in header]
        what = (f"its header gives {' and '.join(given)} (-1 and 0 mean unknown)" if given else
                "it states no machine size (an SWF header's MaxNodes / MaxProcs; accounting dumps such as sacct "
                "have none)")
        raise ConfigError(
            f"{source or 'trace'}: no system named or catalogued for this trace, and {what}; pass --system NAME "
            "or a system TOML file (see `twinsweep systems`)"
        )
    cpn = 1
    head = (f"SWF header MaxNodes {'absent' if max_nodes is None else max_nodes}, "
            f"MaxProcs {'absent' if max_procs is None else max_procs}")
    if procs_unit != "cores" or not max_procs:
        how = f"{head}: {nodes:,} nodes" + (" (the trace counts nodes)" if procs_unit != "cores" else "")
    elif not max_nodes:
        how = f"{head}: {nodes:,} one-processor nodes"
    elif max_procs % max_nodes == 0:
        cpn = max_procs // max_nodes
        how = f"{head}: {nodes:,} nodes of {cpn} processor{'s' if cpn != 1 else ''}"
    elif max_procs < max_nodes:  # fewer processors than nodes: no node size fits; the nodes are kept
        how = f"{head}: MaxProcs is below MaxNodes, so {nodes:,} one-processor nodes (the header's MaxNodes)"
    else:
        # nodes of different sizes (MaxProcs is not a multiple of MaxNodes): no one node size holds
        # the machine, so it is allocated by processor, all MaxProcs of them (never MaxNodes
        # one-processor nodes, which would drop most of its capacity)
        nodes = max_procs
        how = (f"{head}: MaxProcs is not a multiple of MaxNodes (nodes of different sizes), so "
               f"{nodes:,} one-processor slots (allocation by processor; give --system for a node model)")
    name = Path(source).name.split(".")[0].lower() if source else "generic"
    return System(
        name=f"generic:{name}", title=f"Generic system from the header of {Path(source).name or 'trace'}",
        nodes=int(nodes), cores_per_node=cpn, cpus_per_node=1,
        default_time_limit=header_count(header, "MaxRuntime", source), power=GENERIC_POWER, generic=True,
        sources=({"what": "nodes, cores_per_node", "cite": how},
                 {"what": "power", "cite": "generic assumed node power (SPEC power_ssj2008-era 1-socket servers)"}),
    )


def resolve_system(ref: str | None, workload, base_dir: str | Path | None = None) -> System:
    """The system of a run on ``workload``, the one rule `twinsweep run`, a sweep and a validation
    share: ``ref`` (a name, or a TOML path; a relative path is looked up in ``base_dir`` first, e.g.
    the study spec's folder, then in the working directory) when given; else the named system whose
    ``traces`` list holds the trace's file name; else a generic system built from the trace header
    (``workload.header``, ``workload.source``, ``workload.procs_unit``).

    Raises UnknownNameError (listing the systems), ConfigError (a missing or bad file, or a header
    without MaxNodes/MaxProcs).
    """
    named = named_system(ref, workload.source, base_dir)
    if named is not None:
        return named
    return system_from_swf_header(workload.header, workload.source, workload.procs_unit)


def named_system(ref: str | None, trace_path: str | Path, base_dir: str | Path | None = None) -> System | None:
    """The part of :func:`resolve_system` that needs no trace content: ``ref`` (name or TOML path,
    a relative path looked up in ``base_dir`` first) when given, else the named system whose
    ``traces`` list holds ``trace_path``'s file name, else None (then only the trace header can
    give a system). Lets a caller know the system's ``timezone`` before the trace is read.
    Raises as :func:`resolve_system`."""
    if ref:
        p = Path(ref)
        if base_dir is not None and p.suffix == ".toml" and not p.is_absolute() and (Path(base_dir) / p).exists():
            ref = str(Path(base_dir) / p)
        return load_system(ref)
    return system_for_trace(str(trace_path))
