"""Where the trace data lives.

The real traces sit in a data folder: ``$TWINSWEEP_DATA`` when set, else ``<repo>/../shared/data``
beside a standard checkout (:func:`data_dir`). The three small traces of the quickstart (KTH SP2 and
SDSC SP2 from the Parallel Workloads Archive, one ALCF Theta job set; 1.7 MB) are also shipped as
package data in ``core/bundled/`` (:data:`BUNDLED_DIR`, with their PROVENANCE.md and citations), so
the README's first command runs on a machine with nothing else. A relative trace path is resolved
in this order (:func:`resolve_data_path`): the working directory, the data folder, the bundled
copies — so the data folder always takes precedence. ``twinsweep data fetch`` fills the data folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ConfigError

#: Environment variable that overrides the data folder.
DATA_ENV = "TWINSWEEP_DATA"

#: The repository root (the folder holding ``pyproject.toml``).
REPO_ROOT = Path(__file__).resolve().parents[1]

#: Traces shipped with the package (``<folder>/<file>`` as under the data folder; PROVENANCE.md).
BUNDLED_DIR = Path(__file__).resolve().with_name("bundled")


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
    ``"pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz"``), and when it is not there, relative to
    :data:`BUNDLED_DIR` (the quickstart's traces shipped with the package).

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
    bundled = BUNDLED_DIR / path
    if bundled.is_file():
        return bundled
    # a bare file name (as `twinsweep systems` lists traces) that sits in a subfolder: say where
    hint = ""
    if len(path.parts) == 1 and root.is_dir():
        found = sorted(str(m.relative_to(root)) for m in root.glob(f"*/{path.name}"))
        if found:
            hint = f"; did you mean {', '.join(repr(f) for f in found)}?"
    where = (f"{DATA_ENV} is set to that folder" if os.environ.get(DATA_ENV)
             else f"set {DATA_ENV} to point at the folder holding the traces")
    raise ConfigError(
        f"data file not found: {str(p)!r} (neither from the working directory {Path.cwd()} nor under the "
        f"data folder {root}; {where}; `twinsweep data list` names the public traces `twinsweep data fetch` downloads)"
        f"{hint}"
    )
