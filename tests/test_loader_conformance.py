"""Trace loaders run the shared loader conformance suite (twinsweep.testing.conformance.LoaderConformance,
issue 12 item 4) on a sample of their format: parametrised from ``LOADERS.names()`` for every text
format with a sample: the traces shipped in core/bundled/, hand-written samples
(written from the rows of tests/test_facility_sacct.py and tests/test_facility_loaders.py, whose
per-row values those files check) and MetaCentrum's log from the data folder.

Not in it, by the suite's contract (one text file, plain or gzip, that loads alone): the Parquet and
folder formats ``pm100``, ``adastra``, ``fdata``, ``lassen-last`` and ``lassen-raps`` (their per-format
tests are tests/test_facility_loaders.py). A new text format must add its sample here:
``test_every_text_format_has_a_sample`` fails until it does."""

from pathlib import Path

import pytest

from twinsweep.core.loaders import LOADERS
from twinsweep.testing.conformance import LoaderConformance

import test_facility_loaders
import test_facility_sacct
from conftest import data_path

BUNDLED = Path(__file__).resolve().parents[1] / "core" / "bundled"


def _written(name: str, text: str):
    def make(tmp: Path) -> Path:
        p = tmp / name
        p.write_text(text)
        return p
    return make


#: format -> (folder for written samples) -> sample path
SAMPLES = {"swf": lambda tmp: BUNDLED / "pwa-swf" / "KTH-SP2-1996-2.1-cln.swf.gz",
           "swf-theta": lambda tmp: BUNDLED / "alcf-theta-dras-jobsets" / "real_week_1.swf.gz",
           "sacct": _written("sacct.txt", "\n".join([test_facility_sacct.HEADER, *test_facility_sacct.ROWS]) + "\n"),
           "swf-frontier": _written("frontier-2024.swf", test_facility_loaders.FRONTIER),
           "eurora": _written("eurora_historical_jobs_dedup.txt", "\n".join(test_facility_loaders.EURORA) + "\n"),
           "swf-metacentrum": lambda tmp: data_path("metacentrum-wagap-2013/wagap-2013.swf.gz")}
#: formats outside the suite's contract (not one text file that loads alone); see the module doc
NOT_TEXT = {"pm100", "adastra", "fdata", "lassen-last", "lassen-raps"}


def test_every_text_format_has_a_sample():
    assert set(LOADERS.names()) - NOT_TEXT - set(SAMPLES) == set()


class TestLoaderConformance(LoaderConformance):
    @pytest.fixture(params=[n for n in LOADERS.names() if n in SAMPLES])
    def loader_name(self, request):
        return request.param

    @pytest.fixture
    def loader_sample(self, loader_name, tmp_path_factory):
        return SAMPLES[loader_name](tmp_path_factory.mktemp("sample"))
