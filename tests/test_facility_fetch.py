"""``twinsweep data fetch``: a local HTTP server on 127.0.0.1 serves a fixture file with HTTP Range
support; downloads resume a truncated ``.part`` file and reject a checksum mismatch."""

from __future__ import annotations

import hashlib
import http.server
import threading

import pytest

from twinsweep.core import fetch as F
from twinsweep.core.errors import ConfigError, UnknownNameError

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB
SHA = hashlib.sha256(PAYLOAD).hexdigest()


class RangeHandler(http.server.BaseHTTPRequestHandler):
    """Serves PAYLOAD at /data.bin (honours ``Range: bytes=N-``), /norange.bin ignores Range."""

    requests: list = []

    def log_message(self, *a):  # keep the test output clean
        pass

    def do_GET(self):  # noqa: N802
        RangeHandler.requests.append((self.path, self.headers.get("Range")))
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
    with pytest.raises(UnknownNameError):
        F.fetch("nope")
    with pytest.raises(ConfigError, match="no file"):
        F.fetch("fixture", files=["zzz"], progress=False)
    with pytest.raises(ConfigError, match="cannot be downloaded automatically"):
        F.fetch("frontier-swf")
    assert main(["data", "fetch", "frontier-swf"]) == 2
    assert main(["data", "list"]) == 0


def test_registry_entries_are_well_formed():
    for d in F.list_datasets():
        assert d.cite and d.loader and d.system
        from twinsweep.core.loaders import available_formats
        from twinsweep.core.system import load_system

        assert d.loader in available_formats()
        load_system(d.system)
        assert d.files or d.manual
        for rf in d.files:
            assert rf.url.startswith("https://")
            assert rf.sha256 is None or len(rf.sha256) == 64
    last = F.REGISTRY["lassen-last"]
    assert all(f.sha256 and f.size for f in last.files)  # published as Git LFS pointers
