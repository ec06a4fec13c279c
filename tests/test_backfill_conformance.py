"""Every registered backfill variant runs the shared backfill conformance suite
(twinsweep.testing.conformance, issue 12 item 4), parametrised from ``BACKFILLS.names()``;
``windows`` with clock rules that hold jobs back on the suite's 6-hour trace (so that its
wake-ups are exercised): no job across 02:00 and 04:00, at most a 30-minute limit from 01:00 to
02:00 (trace time 0 is a Thursday 00:00)."""

import pytest

from twinsweep.core.backfill import BACKFILLS
from twinsweep.testing.conformance import BackfillConformance


OPTIONS = {"windows": {"sync": "mon-sun 02:00 04:00", "caps": "mon-sun 01:00-02:00 0:30"}}


class TestBackfillConformance(BackfillConformance):
    @pytest.fixture(params=BACKFILLS.names())
    def backfill_name(self, request):
        return request.param

    @pytest.fixture
    def backfill_options(self, backfill_name):
        return OPTIONS.get(backfill_name, {})
