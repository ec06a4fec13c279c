"""Download the public facility datasets: ``twinsweep data fetch NAME`` (and ``data list``).

A small registry maps a dataset name to its public files (URL, SHA-256 and size where they are
published) and to the folder under the data directory (:func:`core.data.data_dir`) it goes to.
Downloads use :mod:`urllib` only:

* **resumable**: bytes go to ``<file>.part``; a later call asks for the rest with an HTTP
  ``Range: bytes=<have>-`` header and appends when the server answers ``206 Partial Content``
  (a ``200`` answer restarts the file from zero);
* **verified**: the size (when known) and the SHA-256 (when known) are checked before the
  ``.part`` file is renamed; a mismatch raises :class:`FetchError` and removes the ``.part``
  file (its bytes cannot be trusted). Files whose checksum is not published (Zenodo publishes
  MD5 only, and those were not available when this registry was written) are recorded with
  ``sha256 = None``: only their size, when known, is checked, and the log says so;
* with a ``rich`` progress bar (bytes, speed, ETA) unless ``progress=False``.

A dataset with no downloadable URL (``manual``) prints where to get it instead.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable

from .errors import ConfigError, TwinError, UnknownNameError


class FetchError(TwinError):
    """A download failed or its bytes do not match the registry (size or SHA-256)."""


@dataclasses.dataclass(frozen=True)
class RemoteFile:
    """One public file: where it is, its name on disk, and what it must hash to (None = unknown)."""

    name: str
    url: str
    sha256: str | None = None
    size: int | None = None


@dataclasses.dataclass(frozen=True)
class RemoteDataset:
    """A named dataset: its files, the data-folder subdirectory, citation and licence."""

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


def _zenodo(record: str, name: str) -> RemoteFile:
    return RemoteFile(name, f"https://zenodo.org/records/{record}/files/{name}?download=1")


_LAST_COMMIT = "151bc9ca31efb144a205befc14dd043a8ce34975"
_LAST = "https://media.githubusercontent.com/media/LLNL/LAST/" + _LAST_COMMIT + "/Lassen-Supercomputer-Job-Dataset/"
_FDATA_MONTHS = [f"{y:02d}_{m:02d}" for y in range(21, 25) for m in range(1, 13) if (21, 3) <= (y, m) <= (24, 4)]

#: The registry (name -> dataset).
REGISTRY: dict[str, RemoteDataset] = {
    d.name: d
    for d in (
        RemoteDataset(
            "pm100", "PM100: Marconi100 job table with per-job power (CINECA, 2020)", "pm100",
            (_zenodo("10127767", "job_table.parquet"),),
            cite="F. Antici et al., 'PM100: A Job Power Consumption Dataset of a Large-scale Production HPC "
                 "System', SC-W 2023; doi:10.5281/zenodo.10127767",
            licence="see the Zenodo record", loader="pm100", system="marconi100",
            note="SHA-256 not published (Zenodo lists MD5); size not recorded here: not verified",
        ),
        RemoteDataset(
            "adastra-mi250", "Adastra MI250 partition, 15 days of jobs with power (CINES)", "adastra",
            (_zenodo("14007065", "AdastaJobsMI250_15days.parquet"),),
            cite="Zenodo record 14007065 (Adastra MI250 jobs, CINES); as used by ExaDigiT/RAPS",
            licence="see the Zenodo record", loader="adastra", system="adastra-mi250",
            note="SHA-256 not published (Zenodo lists MD5): not verified",
        ),
        RemoteDataset(
            "fdata", "F-DATA: Fugaku workload, one parquet per month (Mar 2021 - Apr 2024)", "fdata",
            tuple(_zenodo("11467483", f"{m}.parquet") for m in _FDATA_MONTHS),
            cite="F. Antici et al., 'F-DATA: A Fugaku Workload Dataset for Job-centric Predictive Modelling in "
                 "HPC Systems'; doi:10.5281/zenodo.11467483",
            licence="see the Zenodo record", loader="fdata", system="fugaku",
            note="file names YY_MM.parquet follow the ExaDigiT/RAPS documentation (e.g. 21_04.parquet); "
                 "SHA-256 not published: not verified. Use --file 21_04.parquet for one month.",
        ),
        RemoteDataset(
            "lassen-last", "LLNL LAST: Lassen job dataset (CSM allocation, node and step history)", "lassen-last",
            (
                RemoteFile("final_csm_allocation_history_hashed.csv", _LAST + "final_csm_allocation_history_hashed.csv",
                           "8d2429f034f626ee052e50d11f77ff755191a0b480240842fb188c8a3bb7c190", 361768711),
                RemoteFile("final_csm_allocation_node_history.csv", _LAST + "final_csm_allocation_node_history.csv",
                           "d521b564f16141296213bc2dba0382e36579f16a54c490252cf03d462aedeccc", 715091060),
                RemoteFile("final_csm_step_history.csv", _LAST + "final_csm_step_history.csv",
                           "c0957b5b81814f4b29e7276262238199822f1e815dd9590d91d3f61167c1439f", 1996856378),
            ),
            cite="T. Patki et al., 'Monitoring Large Scale Supercomputers: A Case Study with the Lassen "
                 "Supercomputer', IEEE CLUSTER 2021; github.com/LLNL/LAST (LLNL-MI-861648)",
            licence="CC-BY-4.0", loader="lassen-last", system="lassen",
            note="SHA-256 and sizes are the Git LFS pointers of LLNL/LAST at commit " + _LAST_COMMIT
                 + "; the step history (2 GB) is not needed by the loader (--file to skip it)",
        ),
        RemoteDataset(
            "frontier-swf", "Frontier (OLCF) public workload traces in SWF (2024, 2025)", "frontier-swf",
            (), cite="V. Maheshwari, D. Klusacek, F. Suter, W. Brewer, 'Workload Traces from the Frontier Exascale "
                     "Supercomputer', JSSPP 2026", loader="swf-frontier", system="frontier",
            manual="No download URL is recorded here (none could be verified offline). Get frontier-2024.swf and "
                   "frontier-2025.swf from the location given in the JSSPP 2026 paper (the JSSPP workload page, "
                   "https://jsspp.org/workload/, hosts the authors' traces) and put them in <data>/frontier-swf/.",
        ),
    )
}


def list_datasets() -> list[RemoteDataset]:
    """The registry's datasets, sorted by name."""
    return [REGISTRY[k] for k in sorted(REGISTRY)]


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while True:
            b = fh.read(chunk)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def _verify(path: Path, rf: RemoteFile) -> None:
    if rf.size is not None and path.stat().st_size != rf.size:
        raise FetchError(f"{rf.name}: size {path.stat().st_size} bytes, expected {rf.size} ({rf.url})")
    if rf.sha256 is not None:
        got = sha256_file(path)
        if got.lower() != rf.sha256.lower():
            raise FetchError(f"{rf.name}: checksum mismatch: sha256 {got}, expected {rf.sha256} ({rf.url})")


def download(rf: RemoteFile, dest_dir: str | os.PathLike, progress: Callable[[int, int | None], None] | None = None,
             timeout: float = 60.0, chunk: int = 1 << 16) -> Path:
    """Download one file into ``dest_dir`` (resuming a ``.part`` file), verify it, return its path.

    ``progress(done_bytes, total_bytes_or_None)`` is called as bytes arrive. An existing complete
    file that verifies is not downloaded again.

    Raises FetchError on an HTTP/network error, a size or SHA-256 mismatch (the ``.part`` file
    is then removed), or a server that sends more bytes than the known size.
    """
    d = Path(dest_dir)
    d.mkdir(parents=True, exist_ok=True)
    final = d / rf.name
    part = d / (rf.name + ".part")
    if final.exists():
        _verify(final, rf)
        if progress:
            progress(final.stat().st_size, final.stat().st_size)
        return final
    have = part.stat().st_size if part.exists() else 0
    if rf.size is not None and have > rf.size:
        part.unlink()
        have = 0
    total = rf.size
    if not (rf.size is not None and have == rf.size):
        req = urllib.request.Request(rf.url, headers={"User-Agent": "twinsweep-fetch/1"})
        if have:
            req.add_header("Range", f"bytes={have}-")
        try:
            resp = urllib.request.urlopen(req, timeout=timeout)  # noqa: S310 - URLs come from the registry
        except urllib.error.HTTPError as exc:
            if exc.code == 416 and have:  # nothing left to send: the .part file is complete
                resp = None
            else:
                raise FetchError(f"{rf.name}: HTTP {exc.code} {exc.reason} ({rf.url})") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise FetchError(f"{rf.name}: cannot download {rf.url}: {getattr(exc, 'reason', exc)}") from exc
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
                                raise FetchError(f"{rf.name}: server sent more than the expected {rf.size} bytes")
                            if progress:
                                progress(done, total)
                except (OSError, urllib.error.URLError) as exc:
                    raise FetchError(f"{rf.name}: download interrupted after {done} bytes ({exc}); "
                                     "run the command again to resume") from exc
    try:
        _verify(part, rf)
    except FetchError:
        part.unlink(missing_ok=True)
        raise
    os.replace(part, final)
    return final


def fetch(name: str, dest: str | os.PathLike | None = None, files: list[str] | None = None,
          progress: bool = True, console=None) -> list[Path]:
    """Download dataset ``name`` of :data:`REGISTRY` into ``dest`` (default ``<data dir>/<folder>``).

    Args:
        name: registry name (``twinsweep data list``).
        dest: target folder.
        files: only these file names of the dataset.
        progress: show a rich progress bar (bytes, speed, ETA).

    Returns the downloaded (or already present and verified) paths.

    Raises UnknownNameError (bad name), ConfigError (a manual dataset, or unknown file names),
    FetchError (download or verification failure).
    """
    if name not in REGISTRY:
        raise UnknownNameError("dataset", name, list(REGISTRY))
    ds = REGISTRY[name]
    if ds.manual:
        raise ConfigError(f"dataset {name!r} cannot be downloaded automatically: {ds.manual}")
    chosen = list(ds.files)
    if files:
        known = {f.name for f in ds.files}
        bad = [f for f in files if f not in known]
        if bad:
            raise ConfigError(f"dataset {name!r} has no file(s) {bad}; files: {sorted(known)}")
        chosen = [f for f in ds.files if f.name in files]
    if dest is None:
        from .data import data_dir

        dest = data_dir() / ds.folder
    out: list[Path] = []
    if not progress:
        for rf in chosen:
            out.append(download(rf, dest))
        return out
    from rich.console import Console
    from rich.progress import (
        BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn,
    )

    console = console or Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                  TimeRemainingColumn(), console=console) as prog:
        for rf in chosen:
            task = prog.add_task(rf.name, total=rf.size)

            def cb(done, total, _t=task):
                prog.update(_t, completed=done, total=total)

            out.append(download(rf, dest, progress=cb))
            if rf.sha256 is None:
                console.print(f"[yellow]{rf.name}: no published SHA-256 in the registry; "
                              f"{'size checked' if rf.size else 'not verified'}[/yellow]")
    return out
