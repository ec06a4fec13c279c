"""Trace loaders run the shared loader conformance suite (twinsweep.testing.conformance.LoaderConformance,
issue 12 item 4) on a sample of their format: parametrised from ``LOADERS.names()`` for the formats
with a sample here (the traces shipped in core/bundled/). Formats without a sample are not in it
yet (their per-format tests are tests/test_loaders.py and tests/test_facility_loaders.py)."""

from pathlib import Path

import pytest

from twinsweep.core.loaders import LOADERS
from twinsweep.testing.conformance import LoaderConformance

BUNDLED = Path(__file__).resolve().parents[1] / "core" / "bundled"
SAMPLES = {"swf": BUNDLED / "pwa-swf" / "KTH-SP2-1996-2.1-cln.swf.gz",
           "swf-theta": BUNDLED / "alcf-theta-dras-jobsets" / "real_week_1.swf.gz"}


class TestLoaderConformance(LoaderConformance):
    @pytest.fixture(params=[n for n in LOADERS.names() if n in SAMPLES])
    def loader_name(self, request):
        return request.param

    @pytest.fixture
    def loader_sample(self, loader_name):
        return SAMPLES[loader_name]
