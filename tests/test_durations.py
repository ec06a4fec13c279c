"""One parser per duration grammar (issue 12, item 6): the twin's ``90m``/``7d`` spelling and
Slurm's ``D-HH:MM:SS``, the latter shared by the sacct loader and the Slurm backend."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hypothesis_budget import examples
from twinsweep.backends.slurm import _limit_minutes, parse_time
from twinsweep.core.durations import parse_human_duration, parse_slurm_duration
from twinsweep.core.errors import ConfigError


@pytest.mark.parametrize("text, seconds", [
    (3600, 3600), (90.4, 90), ("90m", 5400), ("6h", 21600), ("7d", 604800), ("2w", 1209600), (" 45 s ", 45),
    ("1.5h", 5400), (None, None),
])
def test_human_durations(text, seconds):
    assert parse_human_duration(text, "window") == seconds


@pytest.mark.parametrize("bad", ["02:00:00", "1-12", "5 min", "-3", True])
def test_human_duration_errors_name_the_field(bad):
    with pytest.raises(ConfigError, match=r"^sample_period: "):
        parse_human_duration(bad, "sample_period")


@pytest.mark.parametrize("bad", ["-3", "-3d", " -1.5h"])
def test_a_negative_human_duration_says_it_must_not_be(bad):
    with pytest.raises(ConfigError, match=r"^duration: must be >= 0, got "):
        parse_human_duration(bad)


def test_the_two_grammars_disagree_on_a_bare_number_as_documented():
    # the twin's own spelling counts seconds, Slurm's counts minutes (sbatch --time=90 is 90 min)
    assert parse_human_duration("90") == 90
    assert parse_slurm_duration("90") == 5400


@pytest.mark.parametrize("text, seconds", [
    ("30", 1800), (45, 2700), ("5:30", 330), ("2:00:00", 7200), ("1-12", 129600), ("1-0:30", 88200),
    ("2-03:04:05", 2 * 86400 + 3 * 3600 + 4 * 60 + 5), ("10:00.5", 600), ("UNLIMITED", None),
    ("Partition_Limit", None),
])
def test_slurm_durations(text, seconds):
    assert parse_slurm_duration(text, "Timelimit") == seconds


@pytest.mark.parametrize("bad, flags, match", [
    ("1:2:3:4", {}, "Timelimit: '1:2:3:4' is not a Slurm duration"),
    ("90:75", {}, "Timelimit: '90:75': seconds must be < 60"),
    ("1-25", {}, "Timelimit: '1-25': hours must be < 24"),
    ("Unknown", {}, "is not a Slurm duration"),            # a missing marker only where it may be missing
    ("UNLIMITED", {"unlimited_ok": False}, "is not a Slurm duration"),
    (1.5, {}, "Timelimit: expected a Slurm duration"),
])
def test_slurm_duration_errors_name_the_field(bad, flags, match):
    with pytest.raises(ConfigError, match=match):
        parse_slurm_duration(bad, "Timelimit", **flags)
    assert parse_slurm_duration("Unknown", "Elapsed", missing_ok=True) is None


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(0, 30), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
def test_slurm_forms_of_one_time_agree(d, h, m, s):
    """The same time written in every Slurm form parses to the same seconds, computed by hand."""
    want = ((d * 24 + h) * 60 + m) * 60 + s
    assert parse_slurm_duration(f"{d}-{h:02d}:{m:02d}:{s:02d}") == want
    assert parse_slurm_duration(f"{d * 24 + h}:{m:02d}:{s:02d}") == want
    assert parse_slurm_duration(f"{(d * 24 + h) * 60 + m}:{s:02d}") == want
    if s == 0:
        assert parse_slurm_duration(f"{d}-{h}:{m}") == want == parse_slurm_duration(str(want // 60))


def test_the_slurm_backend_reads_times_with_the_same_parser():
    """parse_time (sbatch --time) and partition limits are the shared parser rounded up to minutes."""
    for text in ("30", "5:30", "0:30", "1-12", "2-03:04:05"):
        assert parse_time(text)[1] == -(-parse_slurm_duration(text) // 60)
    assert _limit_minutes("1-00:00:00") == 1440
    assert _limit_minutes("UNLIMITED") is None and _limit_minutes("NONE") is None and _limit_minutes(None) is None
