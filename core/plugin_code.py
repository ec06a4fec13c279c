"""Which code a run's plug-ins are: the part of a run's identity that the twin's version does not cover.

A run's key (:func:`core.config.run_key`) covers its config, trace and system; the built-in
policies, backfill variants, loaders and metrics are covered by the twinsweep version the
manifest records. A plug-in from another package (docs/plugins.md: an entry point, or a
``"module:object"`` path) is code the twin does not version: edited, it would give other results
under the same key, and a sweep would reuse the old ones as complete. So a run's key also covers
the source of the plug-ins it uses that are not part of twinsweep (:func:`plugins_identity`), and
its manifest says which they are (:func:`plugins_manifest`).

What "the source" is (:func:`code_identity`): every ``.py`` file of the plug-in's top-level
package (its folder, recursively, in sorted order; a plug-in's helpers usually sit beside it), or
its module's file when it is a single module; for an object defined where no file exists (an
interactive session, ``__main__`` run from a pipe) its own source text (:func:`inspect.getsource`)
when Python has it, else nothing can be known and the identity says ``unknown``. Hashed once per
process and package. An external scheduler (``policy = "external"``) is a program, not a plug-in:
its command line is in the key, its code is not.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import sys
import types
from pathlib import Path

from .backfill import BACKFILLS
from .loaders import LOADERS
from .metrics import plugin_metrics
from .policies import POLICIES
from .registry import is_builtin_module, plugin_origin

__all__ = ["code_identity", "plugins_identity", "plugins_manifest"]

#: A package with more ``.py`` files than this is hashed by its module file only (a plug-in that
#: lives inside a large framework); the identity then says so (``"scope": "module"``).
MAX_PACKAGE_FILES = 2_000


@functools.lru_cache(maxsize=None)
def _package_digest(top: str, module_name: str) -> tuple[str, str]:
    """(scope, sha256 hex) of package ``top``'s ``.py`` files, or of ``module_name``'s file."""
    pkg = sys.modules.get(top)
    folders = [Path(p) for p in getattr(pkg, "__path__", ()) if Path(p).is_dir()]
    files: list[tuple[str, Path]] = []
    for folder in folders:
        files += [(f"{folder.name}/{p.relative_to(folder).as_posix()}", p) for p in folder.rglob("*.py")]
    scope = "package"
    if not files or len(files) > MAX_PACKAGE_FILES:
        f = getattr(sys.modules.get(module_name), "__file__", None)
        files, scope = ([(Path(f).name, Path(f))] if f and Path(f).is_file() else []), "module"
    if not files:
        return "unknown", ""
    h = hashlib.sha256()
    for rel, path in sorted(files):
        h.update(rel.encode() + b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return scope, h.hexdigest()


@functools.lru_cache(maxsize=None)
def _distribution(top: str) -> tuple[str | None, str | None]:
    """(distribution, version) that provides top-level package ``top`` (None, None when none),
    read once per process."""
    from importlib import metadata  # only when a plug-in from another package is used (~6 ms CPU)

    for dist in metadata.packages_distributions().get(top, ()):
        try:
            return dist, metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None, None


def code_identity(obj) -> dict | None:
    """The code of plug-in object ``obj`` (a class, a function, a module, a loader): None when it is
    part of twinsweep (the version covers it), else ``{"module", "scope", "sha256", "distribution",
    "version"}``: its module's name, what was hashed (``package``: every ``.py`` file of its
    top-level package; ``module``: its module's file; ``source``: its own source text;
    ``unknown``: nothing could be read, ``sha256`` empty), the sha256 hex digest, and the installed
    distribution that provides its top-level package with its version (None when it is not
    installed, e.g. a module on ``sys.path`` only)."""
    name = plugin_origin(obj) or "?"  # the module its code comes from (the registries' own reading)
    module = sys.modules.get(name)
    if is_builtin_module(name):
        return None
    top = name.split(".")[0]
    scope, digest = ("unknown", "")
    if module is not None and name != "__main__":
        scope, digest = _package_digest(top, name)
    if scope == "unknown":
        try:
            source = inspect.getsource(obj if not isinstance(obj, types.ModuleType) else module)
            scope, digest = "source", hashlib.sha256(source.encode()).hexdigest()
        except (OSError, TypeError):
            pass
    dist, version = _distribution(top) if top not in ("__main__", "?") else (None, None)
    return {"module": name, "scope": scope, "sha256": digest, "distribution": dist, "version": version}


def _used(config, workload_format: str | None) -> list[tuple[str, str, object]]:
    """(kind, name, object) of every plug-in a run of ``config`` uses: its policy, its backfill
    variant (not for replay, which has none), its trace format when it is a registered loader's,
    and every metric plug-in (each run's stats.json computes them all)."""
    used = []
    if config.policy in POLICIES:  # (replay and external are the engine's own, not registered policies)
        used.append(("policy", config.policy, POLICIES.get(config.policy)))
    if config.policy != "replay":
        used.append(("backfill", config.backfill, BACKFILLS.get(config.backfill)))
    if workload_format and workload_format in LOADERS:  # (a Workload built in code may name no loader)
        used.append(("format", workload_format, LOADERS.get(workload_format)))
    used += [("metric", m.name, m) for m in plugin_metrics()]
    return used


def plugins_manifest(config, workload_format: str | None) -> dict[str, dict]:
    """``"kind:name"`` -> :func:`code_identity` for each plug-in the run uses that is not part of
    twinsweep (``{}`` for a run of built-ins only): what a run's manifest records."""
    out = {}
    for kind, name, obj in _used(config, workload_format):
        ident = code_identity(obj)
        if ident is not None:
            out[f"{kind}:{name}"] = ident
    return out


def plugins_identity(config, workload_format: str | None) -> str:
    """The plug-ins' part of a run key: ``""`` when every plug-in the run uses is twinsweep's own
    (so that the keys of such runs are what they were before plug-in code was keyed), else
    ``"kind:name=scope:sha256"`` items joined by ``,`` in sorted order. Raises what the
    registries' ``get`` raises for a name that is not valid (UnknownNameError, ConfigError)."""
    items = plugins_manifest(config, workload_format)
    return ",".join(f"{k}={v['scope']}:{v['sha256']}" for k, v in sorted(items.items()))
