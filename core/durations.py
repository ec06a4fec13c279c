"""The two duration grammars of twinsweep, one parser each; every error names the field.

* :func:`parse_human_duration` — the twin's own spelling in run configs, study specs and the CLI:
  seconds as a number, or a number with one unit ``s``/``m``/``h``/``d``/``w``
  (``3600``, ``"90m"``, ``"6h"``, ``"7d"``, ``"2w"``).
* :func:`parse_slurm_duration` — Slurm's spelling of a time (``sbatch --time``, partition
  ``DefaultTime``/``MaxTime``, sacct's ``Elapsed`` and ``Timelimit``): ``MM``, ``MM:SS``,
  ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS`` (sbatch(1), option ``--time``: "Acceptable
  time formats include minutes, minutes:seconds, hours:minutes:seconds, days-hours,
  days-hours:minutes and days-hours:minutes:seconds"); a bare number is **minutes**. ``UNLIMITED``
  / ``INFINITE`` / ``Partition_Limit`` mean no limit. sacct prints fractional seconds in
  ``Elapsed`` of short steps (``10:00.5``); they are rounded to whole seconds.

The Slurm parser is shared by the sacct loader (:mod:`core.loaders.sacct`) and the Slurm backend
(:mod:`backends.slurm`), so the two agree on what a Slurm time means.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import ConfigError

__all__ = ["parse_human_duration", "parse_slurm_duration", "duration_text", "is_negative_duration", "SLURM_UNLIMITED", "SLURM_MISSING"]

_HUMAN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}

#: Slurm's words for "no limit" (lower case): sacct's ``Timelimit`` of a job in an unlimited
#: partition, scontrol's ``MaxTime``; sacct prints ``INVALID`` for a limit it cannot show.
SLURM_UNLIMITED = frozenset({"unlimited", "partition_limit", "infinite", "invalid"})
#: What sacct prints for a field with no value (lower case).
SLURM_MISSING = frozenset({"", "unknown", "none", "n/a", "(null)", "invalid"})

_FORMS = "MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS"
_SECONDS = r"(\d+(?:\.\d+)?)"


def duration_text(s: int) -> str:
    """Whole seconds for people, in the largest unit of :func:`parse_human_duration`'s that divides
    them, weeks aside: ``3 d``, ``12 h``, ``1 min``, ``90 s`` (``0 s``)."""
    s = int(s)
    for unit, n in (("d", 86400), ("h", 3600), ("min", 60)):
        if s and s % n == 0:
            return f"{s // n:,} {unit}"
    return f"{s:,} s"


def is_negative_duration(text) -> bool:
    """Whether ``text`` is a duration in :func:`parse_human_duration`'s spelling with a minus sign
    (``"-3d"``, ``"-90"``): a length that is wrong by its sign, not by its spelling."""
    t = str(text).strip()
    return t.startswith("-") and bool(_HUMAN.match(t[1:]))


def parse_human_duration(text: str | int | float | None, what: str = "duration") -> int | None:
    """Seconds (int) from ``3600``, ``"90m"``, ``"6h"``, ``"7d"``, ``"2w"``; None passes through.

    Fractions are allowed (``"1.5h"`` = 5400) and rounded to whole seconds. Raises ConfigError
    naming ``what`` for anything else (a bool, another unit, a Slurm ``HH:MM:SS``) or a negative value.
    """
    if text is None:
        return None
    if isinstance(text, bool):
        raise ConfigError(f"{what}: expected seconds or a number with s/m/h/d/w, got {text!r}")
    if isinstance(text, (int, float)):
        if text < 0:
            raise ConfigError(f"{what}: must be >= 0, got {text}")
        return int(round(text))
    m = _HUMAN.match(str(text))
    if not m and is_negative_duration(text):
        raise ConfigError(f"{what}: must be >= 0, got {text!r}")
    if not m:
        raise ConfigError(f"{what}: expected seconds or a number with s/m/h/d/w (e.g. 3600, 90m, 6h, 7d), got {text!r}")
    return int(round(float(m.group(1)) * _UNIT[m.group(2)]))


def parse_slurm_duration(value: Any, where: str = "duration", *, kind: str = "Slurm duration",
                         missing_ok: bool = False, unlimited_ok: bool = True) -> int | None:
    """Seconds (int) of a Slurm time (grammar in the module docstring); an ``int`` is minutes.

    ``where`` names the field in every error (e.g. ``"Elapsed"``, ``"backend.slurm.time"``) and
    ``kind`` what it holds (``"Slurm time limit"``). Returns None for an unlimited value when
    ``unlimited_ok`` and for sacct's missing markers (``Unknown``, ``None``, empty) when
    ``missing_ok``. Minutes and seconds after a higher field must be < 60 and hours after days < 24.
    Raises ConfigError (a ValueError) naming ``where`` for any other value.
    """
    if value is None and missing_ok:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ConfigError(f"{where}: expected a {kind} ({_FORMS}, or an integer number of minutes), got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ConfigError(f"{where}: {value}: a {kind} must be >= 0")
        return value * 60
    text = value.strip()
    low = text.lower()
    if unlimited_ok and low in SLURM_UNLIMITED:
        return None
    if missing_ok and low in SLURM_MISSING:
        return None
    d = h = m = 0
    s = 0.0
    if mt := re.fullmatch(r"\d+", text):
        m = int(text)
    elif mt := re.fullmatch(rf"(\d+):{_SECONDS}", text):
        m, s = int(mt[1]), float(mt[2])
        if s >= 60:
            raise ConfigError(f"{where}: {text!r}: seconds must be < 60 (MM:SS)")
    elif mt := re.fullmatch(rf"(\d+):(\d+):{_SECONDS}", text):
        h, m, s = int(mt[1]), int(mt[2]), float(mt[3])
        if m > 59 or s >= 60:
            raise ConfigError(f"{where}: {text!r}: minutes and seconds must be < 60 (HH:MM:SS)")
    elif mt := re.fullmatch(rf"(\d+)-(\d+)(?::(\d+))?(?::{_SECONDS})?", text):
        d, h = int(mt[1]), int(mt[2])
        m, s = int(mt[3] or 0), float(mt[4] or 0)
        if h > 23 or m > 59 or s >= 60:
            raise ConfigError(f"{where}: {text!r}: hours must be < 24, minutes and seconds < 60 (D-HH:MM:SS)")
    else:
        raise ConfigError(f"{where}: {text!r} is not a {kind}; use {_FORMS} (e.g. 30, 2:00:00, 1-12)")
    return ((d * 24 + h) * 60 + m) * 60 + round(s)
