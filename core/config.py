"""Run configuration (DESIGN.md §2): serialisable to JSON, its canonical hash is the run's identity."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .durations import parse_human_duration
from .errors import ConfigError

#: Fields added after the first run identities were issued: left out of the canonical JSON (and so
#: of the run key) while they hold these defaults.
_IDENTITY_OMIT_DEFAULT = {"cooling": False, "wetbulb": None, "scheduler": None}


def check_timezone(name) -> None:
    """ConfigError unless ``name`` is an IANA time zone name (or UTC)."""
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"tz: expected an IANA time zone name such as 'Europe/Rome', got {name!r}")
    if name.upper() in ("UTC", "Z", "GMT"):
        return
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(f"tz: unknown time zone {name!r} (an IANA name such as 'Europe/Rome')") from exc


@dataclasses.dataclass(frozen=True)
class Perturbation:
    """Seed-driven workload perturbation (seed 0 always leaves the trace unperturbed).

    runtime_sigma: sigma of multiplicative log-normal noise on run times, ``r' = round(r·exp(σ·N(0,1)))``
        (median factor 1); the time limit is not changed, so perturbed jobs may hit it.
    submit_jitter_s: submit times shifted by a uniform integer in ``[-j, +j]`` s (clipped at 0).
    """

    runtime_sigma: float = 0.0
    submit_jitter_s: int = 0

    def __post_init__(self):
        # NaN passes a comparison, and NaN/inf have no JSON (the run key's canonical JSON, manifest.json)
        if not math.isfinite(self.runtime_sigma) or self.runtime_sigma < 0 or self.submit_jitter_s < 0:
            raise ConfigError(f"perturbation: runtime_sigma and submit_jitter_s must be finite numbers >= 0, got {self}")


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """Everything that defines one twin run.

    data: trace path; format: loader name or None (detect); system: system name / TOML path or None
    (generic system from the trace header); policy / backfill: registered names (core.policies.POLICIES,
    core.backfill.BACKFILLS, or ``replay``);
    start / duration: window in s from the trace epoch (None = whole trace); sample_period: timeline
    bin width (s); seed; kill: end jobs at their time limit (reschedule mode only); lenient: skip
    malformed trace lines; perturbation; options: policy options (e.g. weights), JSON-serialisable.
    cooling: run the cooling model (core/cooling/, docs/cooling.md): the timeline gains PUE,
    coolant temperatures and cooling power, facility energy includes cooling; wetbulb: outdoor
    wet bulb for it, a constant °C or a CSV path (None = the plant's design wet bulb; ignored and
    set to None when cooling is off). Both are left out of the run identity at their defaults, so
    keys of runs without cooling are what they were before these fields existed.
    tz: IANA zone of the trace's local wall-clock times (``twinsweep run --tz``, a dataset's ``tz``
    key), winning over the zone the file states, the system file's and ``$TWINSWEEP_TZ``
    (:func:`core.loaders._facility.resolve_timezone`); None = that precedence. Never in the
    canonical JSON: the run key covers the zone the trace was actually read in
    (:attr:`core.workload.Workload.identity`), however it was chosen.
    scheduler: the external scheduler of ``policy = "external"`` (docs/protocol.md): a command line
    (``"python studies/schedulers/fcfs_easy.py"``) or ``inproc:MODULE:NAME``; required by that
    policy, ignored and set to None for every other; part of the run identity as written (None is
    left out of it, so keys of other runs are unchanged).
    """

    data: str
    system: str | None = None
    format: str | None = None
    policy: str = "fcfs"
    backfill: str = "none"
    start: int | None = None
    duration: int | None = None
    sample_period: int = 60
    seed: int = 0
    kill: bool = True
    lenient: bool = False
    perturbation: Perturbation = Perturbation()
    options: tuple = ()  # sorted (key, value) pairs, so that the config stays hashable
    cooling: bool = False
    wetbulb: float | str | None = None
    tz: str | None = None
    scheduler: str | None = None

    def __post_init__(self):
        if self.tz is not None:
            check_timezone(self.tz)
        if not isinstance(self.cooling, bool):
            raise ConfigError(f"cooling must be true or false, got {self.cooling!r}")
        wb = self.wetbulb
        if not self.cooling:
            wb = None
        elif isinstance(wb, bool):
            raise ConfigError(f"wetbulb: expected °C or a CSV path, got {wb!r}")
        elif isinstance(wb, (int, float)):
            wb = float(wb)
        elif isinstance(wb, str):
            try:
                wb = float(wb)
            except ValueError:
                wb = wb.strip()
                if not wb:
                    raise ConfigError("wetbulb: empty string; give °C or a CSV path") from None
        elif wb is not None:
            raise ConfigError(f"wetbulb: expected °C or a CSV path, got {wb!r}")
        if isinstance(wb, float) and not (-60.0 <= wb <= 45.0):
            raise ConfigError(f"wetbulb: {wb} is not a wet-bulb temperature in °C (-60..45)")
        object.__setattr__(self, "wetbulb", wb)
        from .scheduler import check_names  # the registries load the scheduler plug-ins

        check_names(self.policy, self.backfill)
        if self.policy == "external":
            if not isinstance(self.scheduler, str) or not self.scheduler.strip():
                raise ConfigError("policy 'external' needs a scheduler: a command line (--scheduler \"CMD ARGS\") "
                                  "or inproc:MODULE:NAME (docs/protocol.md)")
        else:  # only the external policy has a scheduler: ignored (as wetbulb without cooling)
            object.__setattr__(self, "scheduler", None)
        if self.sample_period is None or int(self.sample_period) < 1:
            raise ConfigError(f"sample_period must be >= 1 s, got {self.sample_period}")
        if self.duration is not None and self.duration <= 0:
            raise ConfigError(f"duration must be > 0 s, got {self.duration}")
        if self.seed < 0:
            raise ConfigError(f"seed must be >= 0, got {self.seed}")

    @property
    def option_dict(self) -> dict[str, Any]:
        return dict(self.options)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field (``tz`` only when set, so that manifests of runs that do
        not choose a zone are what they were before the field existed)."""
        d = dataclasses.asdict(self)
        d["options"] = {k: v for k, v in self.options}
        if d.get("tz") is None:
            d.pop("tz", None)
        if d["scheduler"] is None:  # added later: manifests of runs without one are unchanged
            d.pop("scheduler")
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunConfig":
        """Inverse of :meth:`to_dict`. Raises ConfigError naming an unknown key."""
        d = dict(d)
        allowed = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - allowed
        if unknown:
            raise ConfigError(f"run config: unknown key(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
        if "perturbation" in d and isinstance(d["perturbation"], dict):
            d["perturbation"] = Perturbation(**d["perturbation"])
        if "options" in d and isinstance(d["options"], dict):
            d["options"] = tuple(sorted(d["options"].items()))
        for k in ("start", "duration"):
            if k in d:
                d[k] = parse_human_duration(d[k], k)
        if "sample_period" in d:
            d["sample_period"] = parse_human_duration(d["sample_period"], "sample_period")
        return cls(**d)

    def canonical_json(self) -> str:
        d = self.to_dict()
        for k, default in _IDENTITY_OMIT_DEFAULT.items():  # fields added later: identity unchanged at default
            if d.get(k) == default:
                d.pop(k, None)
        d.pop("tz", None)  # the zone used is in the workload identity (class docstring)
        return json.dumps(d, sort_keys=True, separators=(",", ":"))

    def key(self, workload_checksum: str = "") -> str:
        """Run identity: sha256 of the canonical config JSON plus the workload checksum (hex, 16 chars)."""
        h = hashlib.sha256(self.canonical_json().encode())
        h.update(workload_checksum.encode())
        return h.hexdigest()[:16]


def system_ref(ref: str | None, system) -> str | None:
    """What ``RunConfig.system`` holds in a run's identity: the reference given (``ref``: a name or
    TOML path, as written), else the resolved named system's name, else None (a generic system
    from the trace header, whose parameters the system checksum carries)."""
    if ref:
        return ref
    return None if getattr(system, "generic", False) else system.name


def run_key(config: RunConfig, workload, system) -> str:
    """A run's identity, the one place it is computed (DESIGN.md §6): :meth:`RunConfig.key` of the
    config with its system as :func:`system_ref` resolves it, over the workload's identity
    (``workload.identity``: sha256 of the uncompressed trace, and the zone its local times were
    read in) and the system's parameters
    (``system.checksum``), and the source of the plug-ins it uses that are not twinsweep's own
    (:func:`core.plugin_code.plugins_identity`; nothing for built-ins, so their keys are unchanged),
    so that a changed trace, system file or plug-in never reuses an old result and
    ``twinsweep run`` and a sweep key the same run alike. Returns 16 hex characters."""
    ref = system_ref(config.system, system)
    if ref != config.system:
        config = dataclasses.replace(config, system=ref)
    sc = system.checksum
    from .plugin_code import plugins_identity  # the registries load the plug-ins (as check_names does)

    code = plugins_identity(config, getattr(workload, "format", None))
    return config.key(workload.identity + ("|" + sc if sc else "") + ("|plugins=" + code if code else ""))
