"""Every registered backfill variant runs the shared backfill conformance suite
(twinsweep.testing.conformance, issue 12 item 4), parametrised from ``BACKFILLS.names()``."""

import pytest

from twinsweep.core.backfill import BACKFILLS
from twinsweep.testing.conformance import BackfillConformance


class TestBackfillConformance(BackfillConformance):
    @pytest.fixture(params=BACKFILLS.names())
    def backfill_name(self, request):
        return request.param
