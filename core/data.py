"""Where the trace data lives.

The real traces are not part of the repository; they sit in a shared data folder
(``<repo>/../shared/data`` in a standard checkout). Point ``TWINSWEEP_DATA`` at another folder to
use a different copy.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ConfigError

#: Environment variable that overrides the data folder.
DATA_ENV = "TWINSWEEP_DATA"

#: The repository root (the folder holding ``pyproject.toml``).
REPO_ROOT = Path(__file__).resolve().parents[1]


def data_dir() -> Path:
    """The trace data folder.

    Order: ``$TWINSWEEP_DATA`` when set (returned even if it does not exist, so that the error
    names it); else ``<repo root>/../shared/data`` when it exists; else ``../shared/data``
    relative to the current working directory (may not exist). Returns an absolute path.
    """
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env).expanduser().resolve()
    beside_repo = (REPO_ROOT / ".." / "shared" / "data").resolve()
    if beside_repo.is_dir():
        return beside_repo
    return (Path.cwd() / ".." / "shared" / "data").resolve()


def resolve_data_path(p: str | os.PathLike) -> Path:
    """Resolve a trace path.

    An absolute path, or a relative path that exists from the working directory, is returned as
    given; any other relative path is taken relative to :func:`data_dir` (e.g.
    ``"pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz"``).

    Raises:
        ConfigError: the file does not exist; the message names the path and the data folder
            (and how to change it).
    """
    path = Path(p).expanduser()
    if path.is_absolute():
        if path.exists():
            return path
        raise ConfigError(f"data file not found: {path}")
    if path.exists():
        return path
    root = data_dir()
    candidate = root / path
    if candidate.exists():
        return candidate
    # a bare file name (as `twinsweep systems` lists traces) that sits in a subfolder: say where
    hint = ""
    if len(path.parts) == 1 and root.is_dir():
        found = sorted(str(m.relative_to(root)) for m in root.glob(f"*/{path.name}"))
        if found:
            hint = f"; did you mean {', '.join(repr(f) for f in found)}?"
    raise ConfigError(
        f"data file not found: {str(p)!r} (neither from the working directory {Path.cwd()} nor under the "
        f"data folder {root}; set {DATA_ENV} to point at the folder holding the traces){hint}"
    )
