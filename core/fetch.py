"""Download the public datasets: ``twinsweep data fetch NAME`` (and ``data list``).

The catalogue, ``core/fetch_catalogue.toml`` (package data), maps a dataset name to its public
files and to the folder under the data directory (:func:`core.data.data_dir`) they go to: every
Parallel Workloads Archive log and ALCF Theta job set of ``../shared/data`` (also by the file's own
name, e.g. ``KTH-SP2-1996-2.1-cln``), the Zenodo power datasets, LLNL LAST and Frontier (manual).
Downloads use :mod:`urllib` only:

* **verified**: a file is accepted only when its bytes match what the catalogue says: SHA-256 and
  size of the file as served (the PWA logs, the Theta job sets, LAST), or the size and MD5 that the
  Zenodo record publishes (its API is read before the download). A mismatch raises
  :class:`FetchError`, removes the downloaded bytes and tries the next URL (pinned mirrors); a file
  with nothing to check against is downloaded with a warning that it is *not* verified;
* **resumable**: bytes go to ``<file>.part``; a later call asks for the rest with an HTTP
  ``Range: bytes=<have>-`` header and appends when the server answers ``206 Partial Content``
  (a ``200`` answer restarts the file from zero);
* **clean**: a fetch that fails removes the folders it created (no empty folders are left);
* ``gzip = true`` files are served as plain text, verified as served, then stored compressed;
* with a ``rich`` progress bar (bytes, speed, ETA) unless ``progress=False``.

A dataset with no downloadable URL (``manual``) prints where to get it instead.
"""

from __future__ import annotations

import dataclasses
import difflib
import gzip
import hashlib
import json
import os
import shutil
import stat
import tomllib
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable

from .atomic import atomic_move, atomic_write
from .errors import ConfigError, TwinError, UnknownNameError

#: The catalogue file (package data beside this module).
CATALOGUE = Path(__file__).with_name("fetch_catalogue.toml")


class FetchError(TwinError):
    """A download failed or its bytes do not match the catalogue (size, SHA-256 or MD5)."""


@dataclasses.dataclass(frozen=True)
class RemoteFile:
    """One public file: its name on disk, where it is, and what it must hash to (None = unknown).

    ``url``: the publisher's URL; ``mirrors``: further URLs tried in order when one fails or
    serves other bytes; ``sha256`` / ``md5`` (hex) and ``size`` (bytes) of the file *as served*;
    ``gzip``: stored gzip-compressed under ``name`` after verification (the served file is plain).
    """

    name: str
    url: str
    sha256: str | None = None
    size: int | None = None
    mirrors: tuple[str, ...] = ()
    md5: str | None = None
    gzip: bool = False

    @property
    def verified_by(self) -> str:
        """``"sha256"``, ``"md5"``, ``"size"`` or ``"nothing"``: what a download is checked against."""
        return "sha256" if self.sha256 else "md5" if self.md5 else "size" if self.size is not None else "nothing"


@dataclasses.dataclass(frozen=True)
class RemoteDataset:
    """A named dataset: its files, the data-folder subdirectory, citation and licence.

    ``md5_from``: a Zenodo record API URL (``https://zenodo.org/api/records/<id>``) whose
    ``files[].size`` and ``files[].checksum`` (``md5:<hex>``) verify files the catalogue holds no
    checksum for; read at download time.
    """

    name: str
    title: str
    folder: str
    files: tuple[RemoteFile, ...] = ()
    cite: str = ""
    licence: str = ""
    loader: str = ""
    system: str = ""
    manual: str | None = None  # instructions when there is no URL to download
    note: str = ""
    md5_from: str | None = None

    @property
    def verification(self) -> str:
        """How its downloads are verified, for ``twinsweep data list``."""
        if self.manual:
            return "manual"
        kinds = {f.verified_by for f in self.files}
        if self.md5_from:
            kinds = {"md5 (record)" if k in ("size", "nothing") else k for k in kinds}
        return ", ".join(sorted(kinds))


_FILE_KEYS = {"name", "urls", "sha256", "size", "md5", "gzip"}
_DATASET_KEYS = {"name", "title", "folder", "files", "cite", "licence", "loader", "system", "manual", "note",
                 "md5_from"}


def load_catalogue(path: str | os.PathLike = CATALOGUE) -> dict[str, RemoteDataset]:
    """The datasets of a catalogue TOML file (format: its header comment), by name. Raises
    ConfigError naming the file and the entry for an unknown key, a missing URL, a malformed
    checksum or a duplicate name."""
    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{p}: cannot read the fetch catalogue: {exc}") from exc
    out: dict[str, RemoteDataset] = {}
    for i, d in enumerate(doc.get("datasets", [])):
        where = f"{p}: datasets[{i}]"
        bad = sorted(set(d) - _DATASET_KEYS)
        if bad or "name" not in d or "folder" not in d:
            raise ConfigError(f"{where}: unknown key(s) {bad} or missing name/folder")
        files = []
        for j, f in enumerate(d.get("files", [])):
            fw = f"{where}.files[{j}]"
            bad = sorted(set(f) - _FILE_KEYS)
            urls = f.get("urls") or []
            if bad or not f.get("name") or not urls:
                raise ConfigError(f"{fw}: unknown key(s) {bad}, or no name / urls")
            for key, n in (("sha256", 64), ("md5", 32)):
                v = f.get(key)
                if v is not None and (len(v) != n or any(c not in "0123456789abcdef" for c in v.lower())):
                    raise ConfigError(f"{fw}.{key}: expected {n} hex digits, got {v!r}")
            files.append(RemoteFile(f["name"], urls[0], f.get("sha256"), f.get("size"), tuple(urls[1:]),
                                    f.get("md5"), bool(f.get("gzip", False))))
        ds = RemoteDataset(d["name"], d.get("title", ""), d["folder"], tuple(files), d.get("cite", ""),
                           d.get("licence", ""), d.get("loader", ""), d.get("system", ""), d.get("manual"),
                           d.get("note", ""), d.get("md5_from"))
        if ds.name in out:
            raise ConfigError(f"{where}: duplicate dataset name {ds.name!r}")
        out[ds.name] = ds
    return out


#: The catalogue (name -> dataset), read from :data:`CATALOGUE` on import.
REGISTRY: dict[str, RemoteDataset] = load_catalogue()


def list_datasets() -> list[RemoteDataset]:
    """The catalogue's datasets, sorted by name."""
    return [REGISTRY[k] for k in sorted(REGISTRY)]


def _file_stem(name: str) -> str:
    for ext in (".swf.gz", ".swf", ".gz", ".parquet", ".csv"):
        if name.endswith(ext):
            return name[: -len(ext)]
    return name


def find(name: str) -> tuple[RemoteDataset, list[str] | None]:
    """``(dataset, files)`` for a catalogue name: a dataset (``files`` None = all of them), or one
    file by its name or its name without extension (``KTH-SP2-1996-2.1-cln``, ``real_week_1``).
    Raises UnknownNameError listing the dataset names and the closest file names."""
    if name in REGISTRY:
        return REGISTRY[name], None
    for ds in REGISTRY.values():
        for rf in ds.files:
            if name in (rf.name, _file_stem(rf.name)):
                return ds, [rf.name]
    files = [n for ds in REGISTRY.values() for rf in ds.files for n in (rf.name, _file_stem(rf.name))]
    close = list(dict.fromkeys(difflib.get_close_matches(name, files, n=3)))
    raise UnknownNameError("dataset", name, sorted(REGISTRY),
                           hint="; or the name of one of their files (`twinsweep data list NAME` lists them)"
                           + (f"; close file names: {', '.join(close)}" if close else ""))


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file's bytes."""
    return _hash_file(path, "sha256", chunk)


def _hash_file(path: Path, algo: str, chunk: int = 1 << 20) -> str:
    h = hashlib.new(algo)
    with open(path, "rb") as fh:
        while True:
            b = fh.read(chunk)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def _verify(path: Path, rf: RemoteFile, url: str) -> None:
    if rf.size is not None and path.stat().st_size != rf.size:
        raise FetchError(f"{rf.name}: size {path.stat().st_size} bytes, expected {rf.size} ({url})")
    for algo in ("sha256", "md5"):
        want = getattr(rf, algo)
        if want is not None:
            got = _hash_file(path, algo)
            if got.lower() != want.lower():
                raise FetchError(f"{rf.name}: checksum mismatch: {algo} {got}, expected {want} ({url})")


def _store(part: Path, final: Path, rf: RemoteFile) -> None:
    """Move a verified download to its final name (compressing it first for ``gzip`` files), through
    :mod:`core.atomic`: the final name holds the whole verified file or nothing, also after a crash."""
    if not rf.gzip:
        atomic_move(part, final)
        return

    def write(tmp: str) -> None:
        with open(part, "rb") as src, open(tmp, "wb") as raw, gzip.GzipFile(
                filename=_file_stem(rf.name) + ".swf" if rf.name.endswith(".swf.gz") else "", mode="wb",
                fileobj=raw, mtime=0) as gz:
            shutil.copyfileobj(src, gz)

    atomic_write(final, write)
    part.unlink()


def _present_ok(final: Path, rf: RemoteFile) -> bool:
    """An existing file is kept when it verifies (for ``gzip`` files: its decompressed bytes)."""
    if not rf.gzip:
        _verify(final, rf, str(final))
        return True
    h_sha, h_md5, n = hashlib.sha256(), hashlib.md5(), 0
    with gzip.open(final, "rb") as fh:
        for b in iter(lambda: fh.read(1 << 20), b""):
            h_sha.update(b)
            h_md5.update(b)
            n += len(b)
    if (rf.size is not None and n != rf.size) or (rf.sha256 and h_sha.hexdigest() != rf.sha256.lower()) or (
            rf.md5 and h_md5.hexdigest() != rf.md5.lower()):
        raise FetchError(f"{final}: present but its content does not match the catalogue; remove it and fetch again")
    return True


def download(rf: RemoteFile, dest_dir: str | os.PathLike, progress: Callable[[int, int | None], None] | None = None,
             timeout: float = 60.0, chunk: int = 1 << 16) -> Path:
    """Download one file into ``dest_dir`` (resuming a ``.part`` file), verify it, return its path.

    The URLs (``rf.url``, then ``rf.mirrors``) are tried in order until one serves bytes that
    verify. ``progress(done_bytes, total_bytes_or_None)`` is called as bytes arrive. An existing
    complete file that verifies is not downloaded again. Folders created here are removed again
    when the download fails.

    Raises FetchError when no URL gives a verified file: an HTTP/network error, a size or checksum
    mismatch (the downloaded bytes are then removed), or a server that sends more bytes than the
    known size; the message names every URL tried.
    """
    d = Path(dest_dir)
    created = [p for p in (d, *d.parents) if not p.exists()]
    d.mkdir(parents=True, exist_ok=True)
    final = d / rf.name
    try:
        if final.exists() and _present_ok(final, rf):
            if progress:
                progress(final.stat().st_size, final.stat().st_size)
            return final
        errors = []
        for url in (rf.url, *rf.mirrors):
            try:
                return _download_from(url, rf, d, final, progress, timeout, chunk)
            except FetchError as exc:
                errors.append(str(exc))
        raise FetchError(errors[0] if len(errors) == 1 else
                         f"{rf.name}: no URL gave a verified file: " + "; ".join(errors))
    except BaseException:
        for p in created:  # deepest first: only the folders this call made, only when empty
            try:
                p.rmdir()
            except OSError:
                break
        raise


def _download_from(url: str, rf: RemoteFile, d: Path, final: Path, progress, timeout: float, chunk: int) -> Path:
    part = d / (rf.name + ".part")
    have = part.stat().st_size if part.exists() else 0
    if rf.size is not None and have > rf.size:
        part.unlink()
        have = 0
    total = rf.size
    if not (rf.size is not None and have == rf.size):
        req = urllib.request.Request(url, headers={"User-Agent": "twinsweep-fetch/1"})
        if have:
            req.add_header("Range", f"bytes={have}-")
        try:
            resp = urllib.request.urlopen(req, timeout=timeout)  # noqa: S310 - URLs come from the catalogue
        except urllib.error.HTTPError as exc:
            if exc.code == 416 and have:  # nothing left to send: the .part file is complete
                resp = None
            else:
                raise FetchError(f"{rf.name}: HTTP {exc.code} {exc.reason} ({url})") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise FetchError(f"{rf.name}: cannot download {url}: {getattr(exc, 'reason', exc)}") from exc
        if resp is not None:
            with resp:
                status = getattr(resp, "status", 200)
                mode = "ab" if (status == 206 and have) else "wb"
                if mode == "wb":
                    have = 0
                length = resp.headers.get("Content-Length")
                if total is None and length is not None and length.isdigit():
                    total = have + int(length)
                done = have
                if progress:
                    progress(done, total)
                try:
                    with open(part, mode) as fh:
                        while True:
                            b = resp.read(chunk)
                            if not b:
                                break
                            fh.write(b)
                            done += len(b)
                            if rf.size is not None and done > rf.size:
                                raise FetchError(f"{rf.name}: server sent more than the expected {rf.size} bytes "
                                                 f"({url})")
                            if progress:
                                progress(done, total)
                except FetchError:
                    part.unlink(missing_ok=True)
                    raise
                except (OSError, urllib.error.URLError) as exc:
                    raise FetchError(f"{rf.name}: download interrupted after {done} bytes ({exc}); "
                                     "run the command again to resume") from exc
    try:
        _verify(part, rf, url)
    except FetchError:
        part.unlink(missing_ok=True)
        raise
    _store(part, final, rf)
    return final


def _with_record_checksums(ds: RemoteDataset, chosen: list[RemoteFile], timeout: float = 60.0) -> list[RemoteFile]:
    """``chosen`` with the size and MD5 the dataset's Zenodo record publishes filled in for files
    the catalogue has no checksum for. Raises FetchError when the record cannot be read or does not
    list a file."""
    need = [rf for rf in chosen if rf.sha256 is None and rf.md5 is None]
    if not ds.md5_from or not need:
        return chosen
    try:
        req = urllib.request.Request(ds.md5_from, headers={"User-Agent": "twinsweep-fetch/1",
                                                          "Accept": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - URL from the catalogue
            record = json.loads(resp.read().decode())
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise FetchError(f"{ds.name}: cannot read the published sizes and checksums from {ds.md5_from} "
                         f"({getattr(exc, 'reason', exc)}); nothing was downloaded") from exc
    entries = record.get("files") if isinstance(record, dict) else None
    if isinstance(entries, dict):  # InvenioRDM: {"entries": {key: {...}}}
        entries = list((entries.get("entries") or {}).values())
    published = {}
    for e in entries or []:
        if isinstance(e, dict) and e.get("key"):
            published[e["key"]] = e
    out = []
    for rf in chosen:
        if rf in need:
            e = published.get(rf.name)
            algo, _, digest = str((e or {}).get("checksum", "")).partition(":")
            if e is None or algo != "md5" or len(digest) != 32:
                raise FetchError(f"{ds.name}: the record {ds.md5_from} publishes no MD5 for {rf.name}; "
                                 "nothing was downloaded")
            rf = dataclasses.replace(rf, md5=digest, size=int(e["size"]) if e.get("size") is not None else rf.size)
        out.append(rf)
    return out


def present(ds: RemoteDataset, root: Path | None = None) -> tuple[list[str], list[str], list[str]]:
    """Which of ``ds``'s files are on this machine: ``(in_data_dir, wrong_size, bundled)``, the
    names found in ``<data dir>/<folder>`` (:func:`core.data.data_dir`) whose size is the
    catalogue's (or unknown), those found there with another size (a partial or different copy:
    `twinsweep data fetch` replaces it), and those shipped with the package
    (:data:`core.data.BUNDLED_DIR`, the quickstart's traces), in catalogue order. A hash is
    checked by `twinsweep data fetch` only. A manual dataset (no file list) gives the files its
    folder holds. ``root``: the data folder (default :func:`core.data.data_dir`, resolved here)."""
    from .data import BUNDLED_DIR, data_dir

    here, shipped = (root or data_dir()) / ds.folder, BUNDLED_DIR / ds.folder
    if ds.manual and not ds.files:
        return (sorted(q.name for q in here.iterdir() if q.is_file() and not q.name.startswith(("PROVENANCE", ".")))
                if here.is_dir() else []), [], []
    ok, bad = [], []
    for f in ds.files:
        try:
            st = (here / f.name).stat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            # a file stored gzip-compressed after download has another size than the one served
            (bad if f.size is not None and not f.gzip and st.st_size != f.size else ok).append(f.name)
    return ok, bad, [f.name for f in ds.files if (shipped / f.name).is_file()]


def fetch(name: str, dest: str | os.PathLike | None = None, files: list[str] | None = None,
          progress: bool = True, console=None) -> list[Path]:
    """Download dataset ``name`` of the catalogue into ``dest`` (default ``<data dir>/<folder>``).

    Args:
        name: a dataset name (``twinsweep data list``) or one of its files' names, with or without
            the extension (``KTH-SP2-1996-2.1-cln``).
        dest: target folder.
        files: only these file names of the dataset.
        progress: show a rich progress bar (bytes, speed, ETA).

    Returns the downloaded (or already present and verified) paths.

    Raises UnknownNameError (bad name), ConfigError (a manual dataset, or unknown file names),
    FetchError (download or verification failure).
    """
    ds, only = find(name)
    if ds.manual:
        raise ConfigError(f"dataset {ds.name!r} cannot be downloaded automatically: {ds.manual}")
    files = files or only
    chosen = list(ds.files)
    if files:
        known = {f.name for f in ds.files}
        bad = [f for f in files if f not in known]
        if bad:
            raise ConfigError(f"dataset {ds.name!r} has no file(s) {bad}; files: {sorted(known)}")
        chosen = [f for f in ds.files if f.name in files]
    chosen = _with_record_checksums(ds, chosen)
    if dest is None:
        from .data import data_dir

        dest = data_dir() / ds.folder
    from rich.console import Console

    console = console or Console(stderr=True)
    for rf in chosen:
        if rf.verified_by in ("size", "nothing"):
            console.print(f"[yellow]{rf.name}: the catalogue has no checksum for it; "
                          f"{'only its size is checked' if rf.size else 'it is NOT verified'}[/yellow]")
    out: list[Path] = []
    if not progress:
        for rf in chosen:
            out.append(download(rf, dest))
        return out
    from rich.progress import (
        BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn,
    )

    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                  TimeRemainingColumn(), console=console) as prog:
        for rf in chosen:
            here = Path(dest) / rf.name
            if here.exists() and _present_ok(here, rf):  # said, not shown as a download of 0 s
                prog.console.print(f"{rf.name}: already in {dest}, checked ({rf.verified_by}); not downloaded again")
                out.append(here)
                continue
            task = prog.add_task(rf.name, total=rf.size)

            def cb(done, total, _t=task):
                prog.update(_t, completed=done, total=total)

            out.append(download(rf, dest, progress=cb))
    return out
