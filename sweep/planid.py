"""What a results folder's study *is*: a fingerprint of its plan, and how a new spec compares.

A results folder belongs to one study. Its name alone does not say which (it defaults to the spec
file's stem): a cut-down copy of a spec with the same name would otherwise be accepted into a
finished folder and rebuild its table and report from its own, smaller plan. So ``study.json``
also stores :func:`plan_fingerprint`: everything that decides which runs the study has —

* ``datasets``: per dataset its trace identity (checksum, and the zone of local times when the
  format has them), format, lenient flag, requested time zone, system (name or path, and the
  checksum of its parameters) and its windows (start and duration in s from the trace epoch);
* ``grid``: every axis with its values; ``seeds``; ``perturbation``;

and ``plan_sha256``, the hash of its canonical JSON. :func:`compare_plans` says how a spec's plan
relates to the folder's:

* the same: nothing to say;
* an **extension** — every run of the folder's plan is still in the new one, and the new plan adds
  seeds, grid values, windows or datasets (same axes, same perturbation, same traces and systems
  for the datasets it keeps): accepted, the sweep runs what was added and says so in one line.
  Adding seeds to a finished study is the common case;
* anything else (a value, seed, window or dataset removed; a trace, system or perturbation
  changed; an axis added or removed): refused with one ConfigError that lists what differs,
  unless the caller passes the explicit override (``twinsweep sweep --replace-plan``), which
  makes the new plan the folder's (run folders of the old plan stay on disk; the table and the
  report then follow the new plan).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["plan_fingerprint", "plan_sha256", "compare_plans"]


def _canon(v: Any) -> str:
    return json.dumps(v, sort_keys=True, separators=(",", ":"), default=str)


def plan_fingerprint(spec, datasets: dict) -> dict[str, Any]:
    """The plan of ``spec`` with its loaded ``datasets`` (:func:`sweep.expand.load_datasets`), as a
    JSON-ready dict (module docstring)."""
    ds_doc = {}
    for d in spec.datasets:
        ld = datasets[d.name]
        epoch = int(ld.workload.epoch)
        ds_doc[d.name] = {
            "trace": ld.workload.identity, "format": d.format, "lenient": bool(d.lenient), "tz": d.tz,
            "system": {"ref": ld.system_ref, "checksum": ld.system.checksum},
            "windows": {w.name: {"start": w.start_seconds(epoch), "duration": w.duration} for w in d.windows},
        }
    return {"datasets": ds_doc, "grid": {a: list(v) for a, v in spec.grid}, "seeds": list(spec.seeds),
            "perturbation": {"runtime_sigma": spec.perturbation.runtime_sigma,
                             "submit_jitter_s": spec.perturbation.submit_jitter_s}}


def plan_sha256(plan: dict[str, Any]) -> str:
    """``"sha256:<hex>"`` of a fingerprint's canonical JSON."""
    return "sha256:" + hashlib.sha256(_canon(plan).encode()).hexdigest()


def _short(v: Any) -> str:
    text = _canon(v)
    return text if len(text) <= 80 else text[:77] + "..."


def _values(values) -> dict[str, Any]:
    return {_canon(v): v for v in values}


def compare_plans(old: dict[str, Any], new: dict[str, Any]) -> tuple[list[str], list[str]]:
    """``(added, differences)`` of plan ``new`` against the folder's plan ``old``.

    ``added``: what an extension adds (``"seeds +[3, 4]"``, ``"grid.policy +['ljf']"``,
    ``"dataset SDSC"``, ``"dataset KTH: window w3"``); ``differences``: every change that is not an
    extension (``"seeds: 1 removed ([2])"``, ``"dataset KTH: trace sha256:… in the folder,
    sha256:… in the spec"`` ...). Both empty: the same plan. ``differences`` non-empty: refuse."""
    added: list[str] = []
    diff: list[str] = []
    op, np_ = old.get("perturbation"), new.get("perturbation")
    if op != np_:
        diff.append(f"perturbation: {_short(op)} in the folder, {_short(np_)} in the spec")
    og, ng = old.get("grid") or {}, new.get("grid") or {}
    if set(og) != set(ng):
        gone, extra = sorted(set(og) - set(ng)), sorted(set(ng) - set(og))
        diff.append("grid axes: " + "; ".join(
            ([f"{', '.join(gone)} only in the folder"] if gone else []) + ([f"{', '.join(extra)} only in the spec"]
                                                                          if extra else [])))
    for axis in sorted(set(og) & set(ng)):
        ov, nv = _values(og[axis]), _values(ng[axis])
        if set(ov) - set(nv):
            diff.append(f"grid.{axis}: {[ov[k] for k in ov if k not in nv]} removed (the folder has "
                        f"{list(ov.values())}, the spec {list(nv.values())})")
        if set(nv) - set(ov):
            added.append(f"grid.{axis} +{[nv[k] for k in nv if k not in ov]}")
    os_, ns = list(old.get("seeds") or []), list(new.get("seeds") or [])
    if set(os_) - set(ns):
        gone = sorted(set(os_) - set(ns))
        diff.append(f"seeds: {len(gone)} removed ({gone}; the folder has {os_}, the spec {ns})")
    if set(ns) - set(os_):
        added.append(f"seeds +{sorted(set(ns) - set(os_))}")
    od, nd = old.get("datasets") or {}, new.get("datasets") or {}
    for name in sorted(set(od) - set(nd)):
        diff.append(f"dataset {name}: in the folder's study, not in the spec")
    for name in sorted(set(nd) - set(od)):
        added.append(f"dataset {name}")
    for name in sorted(set(od) & set(nd)):
        o, n = od[name], nd[name]
        for k in ("trace", "format", "lenient", "tz", "system"):
            if o.get(k) != n.get(k):
                diff.append(f"dataset {name}: {k} {_short(o.get(k))} in the folder, {_short(n.get(k))} in the spec")
        ow, nw = o.get("windows") or {}, n.get("windows") or {}
        for w in sorted(set(ow) - set(nw)):
            diff.append(f"dataset {name}: window {w} removed")
        for w in sorted(set(ow) & set(nw)):
            if ow[w] != nw[w]:
                diff.append(f"dataset {name}: window {w} is {_short(ow[w])} in the folder, {_short(nw[w])} in the spec")
        for w in sorted(set(nw) - set(ow)):
            added.append(f"dataset {name}: window {w}")
    return added, diff
