"""The user cache folder: what the twin keeps between processes to start faster.

Where: ``$TWINSWEEP_CACHE`` when set (``off``, ``0``, ``no`` or ``false`` disables every cache),
else ``$XDG_CACHE_HOME/twinsweep/workloads`` (default ``~/.cache/twinsweep/workloads``): one
folder for every results folder and data folder, never inside the user's data or results. It
holds

* parsed traces, ``<key>.arrow`` (:mod:`twinsweep.core.loaders._cache`);
* the scan of installed entry points, ``entry-points-<key>.json``
  (:func:`twinsweep.core.registry.installed_entry_points`).

Everything in it can be deleted at any time: a missing or unreadable file is rebuilt, and a
folder that cannot be written only costs the work the cache saves.
"""

from __future__ import annotations

import os
from pathlib import Path

#: values of ``TWINSWEEP_CACHE`` that disable the cache
OFF = ("off", "0", "no", "false")


def cache_dir() -> Path | None:
    """The cache folder (see the module doc), or None when ``TWINSWEEP_CACHE`` disables it. The
    folder may not exist yet (writers create it)."""
    env = os.environ.get("TWINSWEEP_CACHE", "").strip()
    if env.lower() in OFF:
        return None
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "twinsweep" / "workloads"
