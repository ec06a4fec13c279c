"""How the sweep layer draws: one colour and line style per variant for every figure, axis ranges
that never magnify noise, and the one way to get matplotlib.

- :func:`variant_styles`: the variant -> (colour, line style) map. The report builds it once and
  every figure of the page (box strips, timelines, pooled quantile functions) draws a variant with
  it, so a variant looks the same everywhere.
- :func:`axis_range`: the value axis of a metric from the metric catalogue's ``floor`` /
  ``min_span`` (:class:`twinsweep.core.metrics.Metric`): from the floor (0 for most metrics, 1 for
  PUE) or, for a quantity without a natural zero (temperatures in °C), at least ``min_span`` wide,
  so that a difference below the noise never fills the axis.
- :func:`pyplot`: matplotlib's non-interactive Agg backend (no display needed on compute nodes or
  in CI), imported on first use so that commands that draw nothing do not pay matplotlib's import
  time, with :data:`RC` applied: no offset labels ("+1.099") and no scientific tick labels.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Mapping, Sequence

__all__ = ["PALETTE", "LINESTYLES", "RC", "VariantStyle", "variant_styles", "axis_range", "contrast_ratio",
           "pyplot"]

#: Variant colours, in assignment order: 12 hues, each with a contrast ratio of at least 3:1 against
#: white (WCAG 2.1 success criterion 1.4.11, non-text contrast; :func:`contrast_ratio`), so that a
#: thin line or a dot stays visible. Neighbours in the list differ in hue.
PALETTE: tuple[str, ...] = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#b35900", "#0f7f8c", "#c2188b",
                            "#5a5a5a", "#7a7a00", "#8c564b", "#1a237e", "#000000")
#: Line styles: (matplotlib name, SVG ``stroke-dasharray`` at a 1.3 px line; "" = solid).
LINESTYLES: tuple[tuple[str, str], ...] = (("-", ""), ("--", "6 3"), (":", "1.5 2.5"), ("-.", "6 2.5 1.5 2.5"))

#: matplotlib settings of every figure drawn through :func:`pyplot`: tick labels never use an offset
#: ("+1.099") or scientific notation for ordinary magnitudes; readable dark text and axes.
RC: dict[str, object] = {
    "axes.formatter.useoffset": False,
    "axes.formatter.limits": (-7, 9),
    "axes.prop_cycle": None,  # set from PALETTE in pyplot()
    "axes.edgecolor": "#444444",
    "axes.labelcolor": "#222222",
    "text.color": "#222222",
    "xtick.color": "#333333",
    "ytick.color": "#333333",
    "grid.color": "#d0d0d0",
    "font.size": 9.0,
    "legend.frameon": False,
}


@dataclasses.dataclass(frozen=True)
class VariantStyle:
    """How one variant is drawn: ``color`` (hex), ``linestyle`` (matplotlib name) and ``dash``
    (the same style as an SVG ``stroke-dasharray``, "" for solid)."""

    color: str
    linestyle: str
    dash: str


def variant_styles(variants: Sequence[str], group: Mapping[str, object] | None = None) -> dict[str, VariantStyle]:
    """The variant -> :class:`VariantStyle` map of a report, in ``variants`` order.

    The i-th variant gets colour ``PALETTE[i % 12]``. Its line style is the one of its ``group``
    value (e.g. its backfill variant: the k-th distinct value gets ``LINESTYLES[k % 4]``), or without
    ``group`` ``LINESTYLES[i // 12 % 4]``; when that (colour, style) pair is taken already, the next
    free style is used, so that the first 48 variants all differ in colour or style. Depends only on
    the arguments: the same variants give the same map in every figure.
    """
    groups = list(dict.fromkeys(group[v] for v in variants)) if group else []
    used: set[tuple[int, int]] = set()
    out: dict[str, VariantStyle] = {}
    for i, v in enumerate(variants):
        c = i % len(PALETTE)
        s = groups.index(group[v]) if group else i // len(PALETTE)
        for k in range(len(LINESTYLES)):
            if (c, (s + k) % len(LINESTYLES)) not in used:
                s = (s + k) % len(LINESTYLES)
                break
        else:
            s %= len(LINESTYLES)
        used.add((c, s))
        out[v] = VariantStyle(PALETTE[c], *LINESTYLES[s])
    return out


def axis_range(metric, lo: float, hi: float, pad: float = 0.04) -> tuple[float, float]:
    """Axis limits (display units) for values in ``[lo, hi]`` of ``metric`` (a
    :class:`~twinsweep.core.metrics.Metric`).

    With a ``floor`` the axis starts there (or at ``lo`` when a value lies below it) and ends
    ``pad`` of the span above ``hi``; without one it is centred on the values and at least
    ``min_span`` wide. A degenerate range (all values equal the floor, or no ``min_span``) gets a span
    of ``max(min_span, 10 % of the magnitude, 1)``. Non-finite ``lo`` / ``hi`` (no data) give the
    floor (or 0) plus that span. Returns ``(low, high)`` with ``low < high``.
    """
    floor = metric.floor
    finite = math.isfinite(lo) and math.isfinite(hi)
    if not finite:
        lo = hi = floor if floor is not None else 0.0
    lo, hi = min(lo, hi), max(lo, hi)
    fallback = max(metric.min_span, 0.1 * max(abs(lo), abs(hi)), 1.0)
    if floor is not None:
        a = min(floor, lo)
        span = hi - a
        if span <= 0:
            return a, a + fallback
        return a - (pad * span if lo < floor else 0.0), hi + pad * span
    span = max(hi - lo, metric.min_span)
    if span <= 0:
        span = fallback
    mid = (lo + hi) / 2
    half = span / 2 * (1 + pad)
    return mid - half, mid + half


def contrast_ratio(fg: str, bg: str = "#ffffff") -> float:
    """WCAG 2.1 contrast ratio ``(L1 + 0.05) / (L2 + 0.05)`` of two ``#rrggbb`` colours (L: relative
    luminance of the linearised sRGB channels, 0.2126 R + 0.7152 G + 0.0722 B; W3C, "Web Content
    Accessibility Guidelines 2.1", 2018, definitions "contrast ratio" and "relative luminance").
    1 (same) .. 21 (black on white). Raises ValueError for a malformed colour."""

    def lum(h: str) -> float:
        h = h.lstrip("#")
        if len(h) != 6:
            raise ValueError(f"colour must be #rrggbb, got {h!r}")
        c = [int(h[i:i + 2], 16) / 255 for i in (0, 2, 4)]
        c = [x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4 for x in c]
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]

    a, b = sorted((lum(fg), lum(bg)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def pyplot():
    """``matplotlib.pyplot`` with the Agg backend selected (PNG output, no display) and :data:`RC`
    applied (every figure: no offset or scientific tick labels, :data:`PALETTE` as colour cycle)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams.update({**RC, "axes.prop_cycle": matplotlib.cycler(color=list(PALETTE))})
    return plt
