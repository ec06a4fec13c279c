"""Every registered backend runs the shared backend conformance suite (twinsweep.testing.conformance,
issue 12 item 4), parametrised from ``BACKENDS.names()``: every task comes back once, failures
are outcomes, shared values arrive, and twin runs equal the serial ``local`` backend's.

Factories: ``local`` serial and with a 2-process pool; ``ray`` on one embedded Ray for the
module (2 CPUs); ``slurm`` on the local test cluster (``slurm/local-cluster.sh``; skipped
locally without it, a failure in CI); any other (installed) backend with ``workers=2``.
"""

from __future__ import annotations

import shutil

import pytest

from ci_policy import skip_or_fail
from twinsweep.backends.base import BACKENDS, make_backend
from twinsweep.testing.conformance import BackendConformance


@pytest.fixture(scope="module")
def ray_once():
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="error")
    yield ray
    if started:
        ray.shutdown()


def _factory(name, workers, request, tmp_path):
    if name == "ray":
        request.getfixturevalue("ray_once")
    if name == "slurm":
        from twinsweep.backends.slurm import slurm_ready

        pytest.importorskip("submitit")
        ok, why = slurm_ready() if shutil.which("sinfo") else (False, "sinfo not found")
        if not ok:
            skip_or_fail(f"no usable Slurm here ({why}); start it with `sudo bash slurm/local-cluster.sh`")
        return lambda: make_backend("slurm", workers=workers, folder=tmp_path / "slurm", poll_s=0.5)
    return lambda: make_backend(name, workers=workers)


PARAMS = [("local", 1), ("local", 2)] + [(n, 2) for n in BACKENDS.names() if n != "local"]


class TestBackendConformance(BackendConformance):
    @pytest.fixture(params=PARAMS, ids=[f"{n}-{w}" for n, w in PARAMS])
    def backend_factory(self, request, tmp_path):
        name, workers = request.param
        return _factory(name, workers, request, tmp_path)
