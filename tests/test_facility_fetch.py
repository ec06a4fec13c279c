"""``twinsweep data fetch``: a local HTTP server on 127.0.0.1 serves a fixture file with HTTP Range
support; downloads resume a truncated ``.part`` file, reject a checksum mismatch (and remove what
they created), fall back to mirrors, verify against a Zenodo-style record's MD5, and the catalogue
holds every PWA log and ALCF Theta job set of the data folder with its size and SHA-256."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import http.server
import json
import threading

import pytest

from twinsweep.core import fetch as F
from twinsweep.core.errors import ConfigError, UnknownNameError

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB
SHA = hashlib.sha256(PAYLOAD).hexdigest()
MD5 = hashlib.md5(PAYLOAD).hexdigest()
#: Other paths the server answers with fixed bodies (no Range support).
_EXTRA = {
    "/other.bin": b"not the catalogued bytes",
    "/plain.swf": PAYLOAD,
    "/api/records/1": json.dumps({"files": [{"key": "data.bin", "size": len(PAYLOAD), "checksum": f"md5:{MD5}"},
                                            {"key": "wrong.bin", "size": len(PAYLOAD), "checksum": "md5:" + "0" * 32},
                                            {"key": "nomd5.bin", "size": len(PAYLOAD)}]}).encode(),
}


class RangeHandler(http.server.BaseHTTPRequestHandler):
    """Serves PAYLOAD at /data.bin (honours ``Range: bytes=N-``), /norange.bin ignores Range."""

    requests: list = []

    def log_message(self, *a):  # keep the test output clean
        pass

    def do_GET(self):  # noqa: N802
        RangeHandler.requests.append((self.path, self.headers.get("Range")))
        if self.path in _EXTRA:
            body = _EXTRA[self.path]
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if self.path not in ("/data.bin", "/norange.bin"):
            self.send_error(404, "not found")
            return
        start = 0
        rng = self.headers.get("Range")
        if rng and self.path == "/data.bin":
            start = int(rng.split("=")[1].split("-")[0])
            if start >= len(PAYLOAD):
                self.send_response(416)
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(PAYLOAD) - 1}/{len(PAYLOAD)}")
        else:
            self.send_response(200)
        body = PAYLOAD[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def _httpd():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RangeHandler)
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture()
def server(_httpd):
    RangeHandler.requests = []
    return _httpd


def test_download_verifies_and_skips_when_present(server, tmp_path):
    rf = F.RemoteFile("data.bin", server + "/data.bin", SHA, len(PAYLOAD))
    seen = []
    p = F.download(rf, tmp_path, progress=lambda d, t: seen.append((d, t)))
    assert p.read_bytes() == PAYLOAD and not (tmp_path / "data.bin.part").exists()
    assert seen[-1] == (len(PAYLOAD), len(PAYLOAD))
    n = len(RangeHandler.requests)
    F.download(rf, tmp_path)  # already there and verified: no request
    assert len(RangeHandler.requests) == n


def test_resume_after_a_truncated_partial_file(server, tmp_path):
    (tmp_path / "data.bin.part").write_bytes(PAYLOAD[:300_000])
    rf = F.RemoteFile("data.bin", server + "/data.bin", SHA, len(PAYLOAD))
    p = F.download(rf, tmp_path)
    assert p.read_bytes() == PAYLOAD
    assert RangeHandler.requests[-1] == ("/data.bin", "bytes=300000-")


def test_server_without_range_support_restarts_the_file(server, tmp_path):
    (tmp_path / "norange.bin.part").write_bytes(b"garbage")
    rf = F.RemoteFile("norange.bin", server + "/norange.bin", SHA, len(PAYLOAD))
    assert F.download(rf, tmp_path).read_bytes() == PAYLOAD


def test_complete_part_file_is_finished_without_download(server, tmp_path):
    (tmp_path / "data.bin.part").write_bytes(PAYLOAD)
    rf = F.RemoteFile("data.bin", server + "/data.bin", SHA, len(PAYLOAD))
    assert F.download(rf, tmp_path).read_bytes() == PAYLOAD
    assert RangeHandler.requests == []


def test_checksum_mismatch_is_an_error_and_drops_the_part_file(server, tmp_path):
    rf = F.RemoteFile("data.bin", server + "/data.bin", "0" * 64, len(PAYLOAD))
    with pytest.raises(F.FetchError, match="checksum mismatch"):
        F.download(rf, tmp_path)
    assert not (tmp_path / "data.bin").exists() and not (tmp_path / "data.bin.part").exists()


def test_size_only_when_no_checksum_is_known(server, tmp_path):
    ok = F.RemoteFile("data.bin", server + "/data.bin", None, len(PAYLOAD))
    assert F.download(ok, tmp_path).stat().st_size == len(PAYLOAD)
    bad = F.RemoteFile("other.bin", server + "/data.bin", None, 10)
    with pytest.raises(F.FetchError, match="more than the expected"):
        F.download(bad, tmp_path)


def test_http_errors(server, tmp_path):
    with pytest.raises(F.FetchError, match="HTTP 404"):
        F.download(F.RemoteFile("x.bin", server + "/missing"), tmp_path)
    with pytest.raises(F.FetchError, match="cannot download"):
        F.download(F.RemoteFile("y.bin", "http://127.0.0.1:9/none"), tmp_path, timeout=2)


def test_fetch_registry_and_cli(server, tmp_path, monkeypatch, capsys):
    ds = F.RemoteDataset("fixture", "a fixture", "fixture", (F.RemoteFile("data.bin", server + "/data.bin", SHA,
                                                                         len(PAYLOAD)),))
    monkeypatch.setitem(F.REGISTRY, "fixture", ds)
    monkeypatch.setenv("TWINSWEEP_DATA", str(tmp_path))
    from twinsweep.sweep.cli import main

    assert main(["data", "fetch", "fixture", "--quiet"]) == 0
    assert (tmp_path / "fixture" / "data.bin").read_bytes() == PAYLOAD
    assert str(tmp_path / "fixture" / "data.bin") in capsys.readouterr().out
    paths = F.fetch("fixture", dest=tmp_path / "elsewhere", progress=True)  # with the rich bar
    assert paths[0].read_bytes() == PAYLOAD
    # fetched again: said to be there and checked, not drawn as a 0-second download (helper-56)
    from io import StringIO

    from rich.console import Console

    buf = StringIO()
    again = F.fetch("fixture", dest=tmp_path / "elsewhere", progress=True, console=Console(file=buf, width=300))
    assert again == paths and (f"data.bin: already in {tmp_path / 'elsewhere'}, checked (sha256); not downloaded "
                               "again") in buf.getvalue()
    with pytest.raises(UnknownNameError):
        F.fetch("nope")
    with pytest.raises(ConfigError, match="no file"):
        F.fetch("fixture", files=["zzz"], progress=False)
    with pytest.raises(ConfigError, match="cannot be downloaded automatically"):
        F.fetch("frontier-swf")
    assert main(["data", "fetch", "frontier-swf"]) == 2
    assert main(["data", "list"]) == 0


def test_registry_entries_are_well_formed():
    from twinsweep.core.loaders import available_formats
    from twinsweep.core.system import load_system

    for d in F.list_datasets():
        assert d.cite and d.loader in available_formats()
        if d.system:  # "" = a named system per trace (the PWA logs)
            load_system(d.system)
        assert d.files or d.manual
        for rf in d.files:
            assert all(u.startswith("https://") for u in (rf.url, *rf.mirrors))
            assert rf.sha256 is None or len(rf.sha256) == 64
            assert rf.verified_by in ("sha256", "md5") or d.md5_from, rf.name  # nothing unverified
    last = F.REGISTRY["lassen-last"]
    assert all(f.sha256 and f.size for f in last.files)  # published as Git LFS pointers


@pytest.mark.parametrize("folder", ["pwa-swf", "alcf-theta-dras-jobsets"])
def test_catalogue_holds_every_shared_trace_with_its_size_and_sha256(folder):
    """Every PWA log and Theta job set of the data folder is in the catalogue, by name, with the
    size and SHA-256 of its bytes as served (the Theta job sets are served plain: of the content)."""
    from conftest import data_path

    here = sorted(data_path(folder).glob("*.swf.gz"))
    assert here
    ds = F.REGISTRY[folder]
    assert {rf.name for rf in ds.files} == {p.name for p in here}
    for p in here:
        rf = next(f for f in ds.files if f.name == p.name)
        raw = gzip.decompress(p.read_bytes()) if rf.gzip else p.read_bytes()
        assert (len(raw), hashlib.sha256(raw).hexdigest()) == (rf.size, rf.sha256), p.name
        assert F.find(p.name.removesuffix(".swf.gz")) == (ds, [p.name])
    if folder == "pwa-swf":
        kth = next(f for f in ds.files if f.name.startswith("KTH"))
        assert kth.url == "https://www.cs.huji.ac.il/labs/parallel/workload/l_kth_sp2/KTH-SP2-1996-2.1-cln.swf.gz"


def test_failed_fetch_removes_the_bytes_and_the_folders_it_created(server, tmp_path):
    dest = tmp_path / "new" / "sub"
    with pytest.raises(F.FetchError, match="checksum mismatch"):
        F.download(F.RemoteFile("data.bin", server + "/data.bin", "0" * 64, len(PAYLOAD)), dest)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(F.FetchError, match="HTTP 404"):
        F.download(F.RemoteFile("x.bin", server + "/missing"), dest)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "keep").mkdir()  # a folder that was there before is kept, even when empty
    with pytest.raises(F.FetchError):
        F.download(F.RemoteFile("x.bin", server + "/missing"), tmp_path / "keep")
    assert (tmp_path / "keep").is_dir()


def test_a_mirror_is_tried_when_the_first_url_serves_other_bytes(server, tmp_path):
    rf = F.RemoteFile("data.bin", server + "/other.bin", SHA, None, mirrors=(server + "/data.bin",))
    assert F.download(rf, tmp_path).read_bytes() == PAYLOAD
    bad = F.RemoteFile("data.bin", server + "/other.bin", SHA, None, mirrors=(server + "/missing",))
    with pytest.raises(F.FetchError, match=r"no URL gave a verified file: .*checksum mismatch.*HTTP 404"):
        F.download(bad, tmp_path / "b")
    assert not (tmp_path / "b").exists()


def test_gzip_files_are_verified_as_served_and_stored_compressed(server, tmp_path):
    rf = F.RemoteFile("trace.swf.gz", server + "/plain.swf", SHA, len(PAYLOAD), gzip=True)
    p = F.download(rf, tmp_path)
    assert p.name == "trace.swf.gz" and gzip.decompress(p.read_bytes()) == PAYLOAD
    assert sorted(x.name for x in tmp_path.iterdir()) == ["trace.swf.gz"]
    n = len(RangeHandler.requests)
    F.download(rf, tmp_path)  # present: its content verifies, no request
    assert len(RangeHandler.requests) == n
    bad = F.RemoteFile("t2.swf.gz", server + "/plain.swf", "0" * 64, len(PAYLOAD), gzip=True)
    with pytest.raises(F.FetchError, match="checksum mismatch"):
        F.download(bad, tmp_path)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["trace.swf.gz"]


def test_zenodo_files_are_verified_by_the_md5_their_record_publishes(server, tmp_path, monkeypatch):
    files = (F.RemoteFile("data.bin", server + "/data.bin"), F.RemoteFile("wrong.bin", server + "/data.bin"),
             F.RemoteFile("nomd5.bin", server + "/data.bin"))
    ds = F.RemoteDataset("zen", "a record", "zen", files, cite="c", loader="swf", md5_from=server + "/api/records/1")
    monkeypatch.setitem(F.REGISTRY, "zen", ds)
    assert F.fetch("zen", dest=tmp_path / "ok", files=["data.bin"], progress=False)[0].read_bytes() == PAYLOAD
    with pytest.raises(F.FetchError, match="checksum mismatch: md5"):
        F.fetch("zen", dest=tmp_path / "w", files=["wrong.bin"], progress=False)
    with pytest.raises(F.FetchError, match="publishes no MD5 for nomd5.bin; nothing was downloaded"):
        F.fetch("zen", dest=tmp_path / "n", files=["nomd5.bin"], progress=False)
    gone = dataclasses.replace(ds, md5_from=server + "/api/records/404")
    monkeypatch.setitem(F.REGISTRY, "zen", gone)
    with pytest.raises(F.FetchError, match="cannot read the published sizes and checksums"):
        F.fetch("zen", dest=tmp_path / "g", progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok"]
    assert ds.verification == "md5 (record)"


def test_help_claims_verification_only_where_there_is_some(capsys):
    from twinsweep.sweep.cli import main

    with pytest.raises(SystemExit):
        main(["data", "fetch", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "checksum/size verified" not in out
    assert "verified where the catalogue can" in out or "with a warning" in out


def test_data_list_with_a_dataset_name_lists_its_files(capsys):
    """`twinsweep data list pwa-swf` names every file `data fetch` takes (the README's promise);
    an unknown dataset is one error listing the valid ones."""
    from twinsweep.core.fetch import list_datasets
    from twinsweep.sweep.cli import main

    assert main(["data", "list", "pwa-swf"]) == 0
    out = capsys.readouterr().out
    pwa = next(d for d in list_datasets() if d.name == "pwa-swf")
    assert pwa.files and all(f.name in out for f in pwa.files)
    assert "SDSC-BLUE-2000-4.2-cln" in out
    assert main(["data", "list", "no-such-set"]) == 2
    err = capsys.readouterr().err
    assert "unknown dataset 'no-such-set'" in err and "pwa-swf" in err


def test_data_list_says_which_files_are_on_this_machine(tmp_path, monkeypatch, capsys):
    """`twinsweep data list` counts each dataset's files in the data folder and in the package
    (the quickstart's traces), and with a name marks each file; an empty data folder has none."""
    from twinsweep.core.data import BUNDLED_DIR
    from twinsweep.sweep.cli import main

    pwa = next(d for d in F.list_datasets() if d.name == "pwa-swf")
    shipped = [f.name for f in pwa.files if (BUNDLED_DIR / pwa.folder / f.name).is_file()]
    assert shipped, "the package ships the quickstart's PWA traces"
    (tmp_path / pwa.folder).mkdir()
    (tmp_path / pwa.folder / pwa.files[0].name).write_bytes(b"x")
    monkeypatch.setenv("TWINSWEEP_DATA", str(tmp_path))
    assert F.present(pwa) == ([], [pwa.files[0].name], shipped)  # 1 byte: not the catalogue's size
    (tmp_path / pwa.folder / pwa.files[1].name).write_bytes(b"x" * pwa.files[1].size)
    assert F.present(pwa) == ([pwa.files[1].name], [pwa.files[0].name], shipped)
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    assert f"1 of {len(pwa.files)}, 1 of another size (+{len(shipped)} in the package)" in out and str(tmp_path) in out
    assert main(["data", "list", "pwa-swf"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if pwa.files[0].name in line)
    assert "not its size: fetch it again" in row
    assert "data folder" in next(line for line in out.splitlines() if pwa.files[1].name in line)
    assert "package" in next(line for line in out.splitlines() if shipped[0] in line)
    monkeypatch.setenv("TWINSWEEP_DATA", str(tmp_path / "nowhere"))
    assert main(["data", "list"]) == 0
    assert "it does not exist yet" in capsys.readouterr().out
