"""Accounts: per-account and per-user usage accumulated over finished jobs (``accounts.json``).

An incentive study (S-RAPS, its Figure 8) collects each account's behaviour in one run and
prioritises accounts by it in later runs. This module holds that bookkeeping; the policies that
read it live in :mod:`core.policies`.

Which jobs count
    The *finished* jobs of a run: ``status`` ``completed`` **and** ``timeout`` with known
    ``start_time``/``end_time`` — the same set as ``stats.json``'s job metrics. A job killed
    at its time limit still held its nodes and drew power until it was killed, and a site's
    accounting charges it (Slurm bills TIMEOUT jobs), so it is charged here too. Jobs still
    ``running`` or ``queued`` at the window end, ``rejected`` and ``not_run`` jobs are not counted.
    Prepopulated jobs (running at the window start) count with their whole simulated run.
    (``from_jobs(..., statuses=("completed",))`` counts completed jobs only.)

Per entry (an account, or a user), sums over its counted jobs, with ``run = sim_end − sim_start``:

* ``jobs``          number of counted jobs
* ``node_seconds``  Σ nodes·run (node·s)
* ``run_seconds``   Σ run (s; what ExaDigiT RAPS calls ``time_allocated``)
* ``energy_j``      Σ job energy (J; the engine's DC node-level ``energy_j``, conversion losses
                    are a system quantity and not attributed to jobs, as in ``stats.json``)
* ``edp_js``        Σ energy·run (J·s), the sum of the jobs' energy-delay products
* ``ed2p_js2``      Σ energy·run² (J·s²)

Derived (recomputed whenever they are read; stored in accounts.json for people, ignored on load):

* ``avg_power_w``   energy_j / node_seconds: average DC power **per node** of the entry's jobs (W);
                    None when node_seconds is 0.
* ``fugaku_points`` see below; None when undefined.

Fugaku points
    The incentive of Solórzano et al., "Toward Sustainable HPC: In-Production Deployment of
    Incentive-Based Power Efficiency Mechanism on the Fugaku Supercomputer", SC24, 2024
    (doi:10.1109/SC41406.2024.00030), as modelled by ExaDigiT RAPS (``raps/account.py``,
    ``Account.update_fugaku_points``): an entry's points are

        points_a = (Ē − E_a) / P̄

    with ``E_a`` the entry's energy, ``Ē`` the mean energy over all entries of the table (accounts
    or users) and ``P̄`` the mean of the entries' average power per node (entries with
    node_seconds > 0). Points are positive for entries that used less energy than the mean entry
    and have the unit node·s: the node-seconds that the energy saved (or overspent) against the
    mean entry buys at the mean entry's per-node power.

    **Not verified against the paper.** We could not read the published definition (the SC24
    paper's text was not available to us), so the formula above is the one ExaDigiT RAPS
    implements and the twinsweep issue states; treat it as "RAPS's Fugaku points", not as the
    operational Fugaku rule. Differences from RAPS's code, all deliberate:

    1. RAPS divides by an average power per *job wall-second* (energy / Σ run time, nodes not
       counted); we use power per *node* (energy / node-seconds), so that points do not grow with
       job width and have a clear unit (node·s).
    2. RAPS's ``P̄`` is ``(E_total / T_total) / n_accounts`` (the all-users ratio divided by the
       number of accounts), not a mean of per-account powers; we use the plain mean of the
       per-account powers, as the issue states ("mean account average power").
    3. RAPS updates an account's points only when one of its own jobs completes, against the
       averages of that moment, so an account's final points depend on the completion order;
       here points are a pure function of the final sums (RAPS's merge recomputes them the same
       way).
    4. RAPS's ``Account.__init__``/``merge`` compute ``avg_power`` as time / energy (inverted);
       ours is energy / node-seconds everywhere.

File format (``accounts.json``, :data:`SCHEMA_VERSION`)::

    {"kind": "twinsweep.accounts", "schema_version": 1,
     "counted_statuses": ["completed", "timeout"],
     "runs": [{"run_key", "policy", "backfill", "workload", "checksum", "window": [t0, t1],
               "system", "power_label"}, ...],          # provenance of every run summed in
     "accounts": {name: {"jobs", "node_seconds", "run_seconds", "energy_j", "edp_js",
                         "ed2p_js2", "avg_power_w", "fugaku_points"}},
     "users": {name: {...same keys...}}}

A missing user/account is keyed ``"unknown"`` (as in stats.json). :func:`merge` sums two tables
(refusing to count the same run twice); a file with another ``kind``, another schema version,
a missing or negative sum, or bad JSON raises :class:`core.errors.ConfigError` naming the file
and the problem.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from .atomic import atomic_write_text
from .errors import ConfigError

__all__ = [
    "SCHEMA_VERSION", "KIND", "ADDITIVE_KEYS", "DERIVED_KEYS", "COUNTED_STATUSES", "Usage",
    "Accounts", "from_jobs", "load_accounts", "save_accounts", "check_accounts_out", "merge", "fugaku_points",
]

#: Version of the accounts.json layout this code reads and writes.
SCHEMA_VERSION = 1
#: The ``kind`` tag of an accounts.json file.
KIND = "twinsweep.accounts"
#: Sums kept per entry (additive across jobs and runs).
ADDITIVE_KEYS = ("jobs", "node_seconds", "run_seconds", "energy_j", "edp_js", "ed2p_js2")
#: Values derived from the sums (never read back from a file).
DERIVED_KEYS = ("avg_power_w", "fugaku_points")
#: Job statuses that count by default (see the module docstring).
COUNTED_STATUSES = ("completed", "timeout")


@dataclasses.dataclass
class Usage:
    """Sums of one account or user (see the module docstring for units)."""

    jobs: int = 0
    node_seconds: float = 0.0
    run_seconds: float = 0.0
    energy_j: float = 0.0
    edp_js: float = 0.0
    ed2p_js2: float = 0.0

    @property
    def avg_power_w(self) -> float | None:
        """Average DC power per node (W) = energy_j / node_seconds; None when node_seconds is 0."""
        return self.energy_j / self.node_seconds if self.node_seconds > 0 else None

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(*(getattr(self, k) + getattr(other, k) for k in ADDITIVE_KEYS))

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in ADDITIVE_KEYS}
        d["jobs"] = int(d["jobs"])
        return d


def fugaku_points(usage: Mapping[str, Usage]) -> dict[str, float | None]:
    """Fugaku points of every entry of one table: ``(Ē − E_a) / P̄`` (module docstring).

    ``Ē``: mean energy over all entries; ``P̄``: mean of ``avg_power_w`` over the entries that
    have one. Every value is None when the table is empty or ``P̄`` is not > 0.
    """
    if not usage:
        return {}
    energies = [u.energy_j for u in usage.values()]
    powers = [u.avg_power_w for u in usage.values() if u.avg_power_w is not None]
    e_mean = math.fsum(energies) / len(energies)
    p_mean = math.fsum(powers) / len(powers) if powers else 0.0
    if not (p_mean > 0 and math.isfinite(p_mean)):
        return {k: None for k in usage}
    return {k: (e_mean - u.energy_j) / p_mean for k, u in usage.items()}


@dataclasses.dataclass
class Accounts:
    """Per-account and per-user :class:`Usage`, plus the provenance of the runs summed in.

    ``accounts``/``users``: name -> Usage; ``runs``: list of provenance dicts (one per run);
    ``counted_statuses``: the job statuses that were counted; ``source``: the file it was read
    from (not saved).
    """

    accounts: dict[str, Usage] = dataclasses.field(default_factory=dict)
    users: dict[str, Usage] = dataclasses.field(default_factory=dict)
    runs: list[dict] = dataclasses.field(default_factory=list)
    counted_statuses: tuple[str, ...] = COUNTED_STATUSES
    source: str | None = None

    # ------------------------------------------------------------------ views
    def table(self, level: str = "account") -> dict[str, Usage]:
        """The ``"account"`` or ``"user"`` table. Raises ConfigError for another level."""
        if level == "account":
            return self.accounts
        if level == "user":
            return self.users
        raise ConfigError(f"accounts: level must be 'account' or 'user', got {level!r}")

    def points(self, level: str = "account") -> dict[str, float | None]:
        """Fugaku points of the account (or user) table (see :func:`fugaku_points`)."""
        return fugaku_points(self.table(level))

    def entry_dict(self, level: str = "account") -> dict[str, dict[str, Any]]:
        """JSON-ready entries of one table: the sums plus ``avg_power_w`` and ``fugaku_points``."""
        tab = self.table(level)
        pts = fugaku_points(tab)
        out = {}
        for name in sorted(tab):
            d = tab[name].to_dict()
            d["avg_power_w"] = tab[name].avg_power_w
            d["fugaku_points"] = pts[name]
            out[name] = d
        return out

    def frame(self, level: str = "account") -> pd.DataFrame:
        """One row per entry (index = name) with every sum and derived value."""
        d = self.entry_dict(level)
        cols = list(ADDITIVE_KEYS) + list(DERIVED_KEYS)
        return pd.DataFrame.from_dict(d, orient="index", columns=cols).rename_axis(level)

    def to_dict(self) -> dict[str, Any]:
        """The accounts.json document (sorted keys when dumped)."""
        return {
            "kind": KIND,
            "schema_version": SCHEMA_VERSION,
            "counted_statuses": list(self.counted_statuses),
            "runs": [dict(r) for r in self.runs],
            "accounts": self.entry_dict("account"),
            "users": self.entry_dict("user"),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, indent=2, allow_nan=False) + "\n"

    def checksum(self) -> str:
        """sha256 (hex, 16 chars) of the canonical sums (provenance and derived values excluded)."""
        doc = {lvl: {k: v.to_dict() for k, v in sorted(self.table(lvl).items())} for lvl in ("account", "user")}
        doc["counted_statuses"] = list(self.counted_statuses)
        return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]

    # ------------------------------------------------------------------ building
    @classmethod
    def from_dict(cls, doc: Any, source: str | None = None) -> "Accounts":
        """Validate an accounts.json document. Raises ConfigError naming ``source`` and the problem."""
        where = source or "accounts.json"
        if not isinstance(doc, dict):
            raise ConfigError(f"{where}: not an accounts file (expected a JSON object, got {type(doc).__name__})")
        if doc.get("kind") != KIND:
            hint = ""
            if "counts" in doc and "system" in doc:
                hint = " (this looks like a stats.json; pass the accounts.json a run wrote with --accounts-out)"
            raise ConfigError(f"{where}: not an accounts file: 'kind' is {doc.get('kind')!r}, expected {KIND!r}{hint}")
        ver = doc.get("schema_version")
        if ver != SCHEMA_VERSION:
            raise ConfigError(f"{where}: accounts schema_version {ver!r} is not supported "
                              f"(this twinsweep reads version {SCHEMA_VERSION})")
        statuses = doc.get("counted_statuses", list(COUNTED_STATUSES))
        if not isinstance(statuses, list) or not all(isinstance(s, str) for s in statuses):
            raise ConfigError(f"{where}: 'counted_statuses' must be a list of status names, got {statuses!r}")
        runs = doc.get("runs", [])
        if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
            raise ConfigError(f"{where}: 'runs' must be a list of objects")
        tables = {}
        for level, key in (("account", "accounts"), ("user", "users")):
            tab = doc.get(key)
            if not isinstance(tab, dict):
                raise ConfigError(f"{where}: missing or invalid '{key}' table (expected an object name -> sums)")
            tables[key] = {str(name): _parse_entry(f"{where}: {key}[{name!r}]", e) for name, e in tab.items()}
        return cls(tables["accounts"], tables["users"], [dict(r) for r in runs], tuple(statuses), source)


def _parse_entry(where: str, e: Any) -> Usage:
    if not isinstance(e, dict):
        raise ConfigError(f"{where}: expected an object with {', '.join(ADDITIVE_KEYS)}")
    missing = [k for k in ADDITIVE_KEYS if k not in e]
    if missing:
        raise ConfigError(f"{where}: missing {missing}")
    vals = {}
    for k in ADDITIVE_KEYS:
        v = e[k]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise ConfigError(f"{where}.{k}: expected a finite number >= 0, got {v!r}")
        vals[k] = v
    if vals["jobs"] != int(vals["jobs"]):
        raise ConfigError(f"{where}.jobs: expected an integer, got {vals['jobs']!r}")
    vals["jobs"] = int(vals["jobs"])
    return Usage(**{k: (vals[k] if k == "jobs" else float(vals[k])) for k in ADDITIVE_KEYS})


def account_names(series: pd.Series | None, n: int) -> list[str]:
    """The ``account`` or ``user`` column as strings, missing values as ``"unknown"``; ``n`` names
    of ``"unknown"`` when the column is absent (``series`` None)."""
    if series is None:
        return ["unknown"] * n
    return ["unknown" if (v is None or (not isinstance(v, str) and pd.isna(v))) else str(v) for v in series]


def from_jobs(jobs: pd.DataFrame, run_info: Mapping[str, Any] | None = None,
              statuses: Iterable[str] = COUNTED_STATUSES) -> Accounts:
    """Accounts of one run from its jobs table (``RunResult.jobs`` / jobs.parquet).

    Needs ``status``, ``start_time``, ``end_time``, ``nodes``, ``energy_j``, ``user``,
    ``account``. ``run_info``: provenance stored in ``runs`` (e.g. run key, policy, window);
    ``statuses``: the statuses that count (default completed and timeout). Jobs with unknown
    energy add 0 J (and count for jobs / node-seconds).
    """
    statuses = tuple(statuses)
    n = len(jobs)
    st = jobs["status"].astype("string").fillna("").to_numpy(dtype=object) if n else np.array([], dtype=object)
    start = pd.to_numeric(jobs["start_time"], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    end = pd.to_numeric(jobs["end_time"], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    keep = np.isin(st, statuses) & np.isfinite(start) & np.isfinite(end)
    run = (end - start)[keep]
    nodes = pd.to_numeric(jobs["nodes"], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)[keep]
    nodes = np.where(np.isfinite(nodes), nodes, 0.0)
    energy = pd.to_numeric(jobs["energy_j"], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)[keep]
    energy = np.where(np.isfinite(energy), energy, 0.0)
    sums = {
        "jobs": np.ones(len(run)), "node_seconds": nodes * run, "run_seconds": run, "energy_j": energy,
        "edp_js": energy * run, "ed2p_js2": energy * run * run,
    }
    tables = {}
    for col in ("account", "user"):
        names = np.asarray(account_names(jobs[col] if col in jobs.columns else None, n), dtype=object)[keep]
        tab: dict[str, Usage] = {}
        if len(names):
            uniq, inv = np.unique(names.astype(str), return_inverse=True)
            agg = {k: np.bincount(inv, weights=v, minlength=len(uniq)) for k, v in sums.items()}
            for g, name in enumerate(uniq):
                tab[str(name)] = Usage(int(round(agg["jobs"][g])), float(agg["node_seconds"][g]),
                                       float(agg["run_seconds"][g]), float(agg["energy_j"][g]),
                                       float(agg["edp_js"][g]), float(agg["ed2p_js2"][g]))
        tables[col] = tab
    runs = [dict(run_info)] if run_info else []
    return Accounts(tables["account"], tables["user"], runs, statuses)


def run_info_of(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The provenance entry of a run (for ``Accounts.runs``) from its manifest.json document."""
    w = manifest.get("window", {}) or {}
    wl = manifest.get("workload", {}) or {}
    sy = manifest.get("system", {}) or {}
    return {
        "run_key": manifest.get("run_key"), "policy": manifest.get("policy"), "backfill": manifest.get("backfill"),
        "seed": manifest.get("seed"), "workload": wl.get("source"), "checksum": wl.get("checksum"),
        "window": [w.get("start"), w.get("end")], "system": sy.get("name"), "power_label": sy.get("power_label"),
    }


def merge(a: Accounts, b: Accounts) -> Accounts:
    """Sum two tables (entries with the same name add up; derived values follow the sums).

    Raises ConfigError when both hold the same run (same non-empty ``run_key``: it would be counted
    twice) or when they counted different job statuses.
    """
    if tuple(a.counted_statuses) != tuple(b.counted_statuses):
        raise ConfigError(f"cannot merge accounts that counted different job statuses: "
                          f"{list(a.counted_statuses)} ({a.source or 'first'}) vs "
                          f"{list(b.counted_statuses)} ({b.source or 'second'})")
    keys_a = {r.get("run_key") for r in a.runs if r.get("run_key")}
    dup = sorted(k for k in {r.get("run_key") for r in b.runs if r.get("run_key")} if k in keys_a)
    if dup:
        raise ConfigError(f"cannot merge accounts: run(s) {dup} are already in {a.source or 'the first table'} "
                          "(merging would count them twice)")

    def add(x: dict[str, Usage], y: dict[str, Usage]) -> dict[str, Usage]:
        out = {k: dataclasses.replace(v) for k, v in x.items()}
        for k, v in y.items():
            out[k] = out[k] + v if k in out else dataclasses.replace(v)
        return dict(sorted(out.items()))

    return Accounts(add(a.accounts, b.accounts), add(a.users, b.users), list(a.runs) + list(b.runs),
                    tuple(a.counted_statuses))


def load_accounts(path: str | os.PathLike) -> Accounts:
    """Read an accounts.json, or derive the accounts from a run directory / its jobs.parquet.

    A directory must hold ``accounts.json`` or ``jobs.parquet`` (+ ``manifest.json`` for the
    provenance). Raises ConfigError (file missing, not JSON, wrong kind or schema, bad sums).
    """
    p = Path(path).expanduser()
    if p.is_dir():
        if (p / "accounts.json").exists():
            p = p / "accounts.json"
        elif (p / "jobs.parquet").exists():
            p = p / "jobs.parquet"
        else:
            raise ConfigError(f"{p}: no accounts.json or jobs.parquet in this directory")
    if not p.exists():
        raise ConfigError(f"accounts file not found: {p}")
    if p.suffix == ".parquet":
        try:
            jobs = pd.read_parquet(p)
        except Exception as exc:  # noqa: BLE001 - any reader error is a bad input file
            raise ConfigError(f"{p}: cannot read jobs table: {exc}") from exc
        need = {"status", "start_time", "end_time", "nodes", "energy_j"}
        if not need <= set(jobs.columns):
            raise ConfigError(f"{p}: not a run's jobs.parquet (missing {sorted(need - set(jobs.columns))})")
        info = None
        man = p.parent / "manifest.json"
        if man.exists():
            try:
                info = run_info_of(json.loads(man.read_text()))
            except (OSError, ValueError):
                info = None
        acc = from_jobs(jobs, info)
        acc.source = str(p)
        return acc
    try:
        doc = json.loads(p.read_text())
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read accounts file: {exc}") from exc
    except ValueError as exc:
        raise ConfigError(f"{p}: not valid JSON: {exc}") from exc
    return Accounts.from_dict(doc, str(p))


def check_accounts_out(path: str | os.PathLike, what: str = "--accounts-out") -> None:
    """Raise ConfigError (naming ``what`` and the path) when :func:`save_accounts` could not create
    the folder of ``path``: the nearest existing ancestor of that folder is a file. Called before a
    run, so that a run is not simulated and written only to fail at its last step."""
    p = Path(path).expanduser()
    if p.is_dir():
        return
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(f"{what} {p}: cannot create its folder: {parent} is a file")
            return


def save_accounts(acc: Accounts, path: str | os.PathLike) -> Path:
    """Write ``acc`` as accounts.json (atomically and fsynced: :func:`core.atomic.atomic_write_text`).
    Returns the path; a full disk is a DiskFullError naming it, a folder that cannot be created a
    ConfigError naming it (:func:`check_accounts_out`)."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "accounts.json"
    check_accounts_out(p, "accounts file")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"accounts file {p}: cannot create its folder ({exc.strerror or exc})") from exc
    return atomic_write_text(p, acc.to_json())


def accounts_of_run(result) -> Accounts:
    """Accounts of a finished run (:class:`core.run.RunResult`), with its provenance."""
    return from_jobs(result.jobs, run_info_of(result.manifest))
