"""The report's charts as inline SVG: box strips (one box per variant, one panel per dataset and
window), line panels (timelines, quantile functions) and scatter panels with error bars (the
trade-off view).

The report (:mod:`twinsweep.sweep.report`) writes its charts as SVG text itself: vector (sharp at
any zoom, labels selectable), embedded in the page (self-contained) and two orders of magnitude
cheaper to make than the same figures through matplotlib's Agg renderer and a PNG encoder
(the 16 box-plot PNGs of the quickstart took ~12 s; their SVG takes ~0.1 s). Every chart

- draws a variant with its :class:`~twinsweep.sweep.plotting.VariantStyle` (one map per page);
- takes its value axes from :func:`~twinsweep.sweep.plotting.axis_range` (floors and minimum spans
  of the metric catalogue) and labels them with :func:`twinsweep.core.metrics.format_number`
  (thousands separators, no offset, no scientific notation);
- keeps its legend outside the data (variant labels left of box strips, a legend row above line
  panels, a legend column right of scatter panels);
- is :data:`WIDTH` px wide (the page's content width at a 1280 px window) and scales down with it.

Long series are drawn at the panel's pixel resolution: per pixel column the first, lowest, highest
and last value (the M4 aggregation of U. Jugel et al., "M4: a visualization-oriented time series
data aggregation", PVLDB 7(10):797-808, 2014), which is exact at that resolution.
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
import math
from typing import Mapping, Sequence

import numpy as np

from twinsweep.core.metrics import format_number, format_spread

from .aggregate import lerp, quantile_positions
from .plotting import VariantStyle

__all__ = ["WIDTH", "Series", "LinePanel", "ScatterPoint", "ScatterPanel", "box_strips", "line_panels",
           "scatter_panels", "nice_ticks"]

#: Width of every chart (px, the SVG viewBox; the page's content width at a 1280 px window).
WIDTH = 1160
_FONT = "font-family:system-ui,sans-serif"
_AXIS, _GRID, _TEXT = "#555555", "#e2e2e2", "#222222"


_NUMS: dict[float, str] = {}  # coordinate -> text: a chart repeats few distinct 0.1 px values


def _num(x: float) -> str:
    s = _NUMS.get(x)
    if s is None:
        s = f"{x:.1f}".rstrip("0").rstrip(".") if abs(x) < 1e9 else "0"
        if x != 0 and len(_NUMS) < 65536:  # never 0: -0.0 == 0.0 but reads "-0"
            _NUMS[x] = s
    return s


def _esc(s: object) -> str:
    return html.escape(str(s), quote=True)


def _nice(x: float, round_: bool) -> float:
    """A "nice" number (1, 2 or 5 × a power of ten) near ``x`` > 0 (Heckbert 1990)."""
    e = math.floor(math.log10(x))
    f = x / 10 ** e
    if round_:
        nf = 1 if f < 1.5 else 2 if f < 3 else 5 if f < 7 else 10
    else:
        nf = 1 if f <= 1 else 2 if f <= 2 else 5 if f <= 5 else 10
    return nf * 10.0 ** e


def nice_ticks(lo: float, hi: float, n: int = 5) -> tuple[list[float], int]:
    """About ``n`` tick values 1, 2 or 5 × 10^k apart inside ``[lo, hi]`` (the nice step of
    P. S. Heckbert, "Nice numbers for graph labels", Graphics Gems, Academic Press, 1990,
    pp. 61-63, with "tight" labelling: the axis keeps its range) and the decimals that show the step
    exactly. ``lo >= hi`` gives ``([lo], 0)``."""
    if not (hi > lo) or not (math.isfinite(lo) and math.isfinite(hi)):
        return [lo], 0
    d = _nice(_nice(hi - lo, False) / max(n - 1, 1), True)
    k0, k1 = math.ceil(lo / d - 1e-9), math.floor(hi / d + 1e-9)
    dec = max(0, -math.floor(math.log10(d) + 1e-9))
    return [round(k * d, dec + 1) for k in range(k0, k1 + 1)], dec


class _Scale:
    """Values -> pixels on ``[p0, p1]`` (p1 < p0 for a vertical axis), linear from the nice ticks
    around ``[lo, hi]``, or symmetric-log with linear range ``linthresh`` (y' = sign(y)·log10(1 +
    |y|/linthresh), as matplotlib's "symlog" up to its constant), or logarithmic (``log``: y' =
    log10(y), ``0 < lo < hi``, ticks at 1, 2 and 5 × 10^k)."""

    def __init__(self, lo: float, hi: float, p0: float, p1: float, symlog: float | None = None, n: int = 5,
                 log: bool = False):
        self.symlog, self.log = symlog, log
        if log:
            self.lo, self.hi = lo, hi
            ks = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
            self.ticks, self.dec = [m * 10.0 ** k for k in ks for m in (1, 2, 5) if lo <= m * 10.0 ** k <= hi], None
        elif symlog:
            self.lo, self.hi = lo, hi
            self.ticks, self.dec = self._log_ticks(lo, hi, symlog), None
        else:
            self.ticks, self.dec = nice_ticks(lo, hi, n)
            self.lo, self.hi = (lo, hi) if hi > lo else (lo, lo + 1.0)
        self.p0, self.p1 = p0, p1
        self._t0, self._t1 = self._t(self.lo), self._t(self.hi)

    def _t(self, v):
        if self.log:
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(np.asarray(v) > 0, np.log10(np.where(np.asarray(v) > 0, v, 1.0)), np.nan)
        if not self.symlog:
            return v
        return np.sign(v) * np.log10(1 + np.abs(v) / self.symlog)

    @staticmethod
    def _log_ticks(lo: float, hi: float, c: float) -> list[float]:
        out = [0.0] if lo <= 0 <= hi else []
        if hi <= 0:
            return out or [lo]
        k0, k1 = math.ceil(math.log10(max(c, 1e-300))), math.floor(math.log10(hi))
        decades = [10.0 ** k for k in range(k0, k1 + 1)]
        if len(decades) < 3:
            decades = sorted(m * 10.0 ** k for k in range(k0 - 1, k1 + 1) for m in (1, 2, 5)
                             if c <= m * 10.0 ** k <= hi)
        return out + decades

    def __call__(self, v):
        t = self._t(np.asarray(v, dtype="float64"))
        span = (self._t1 - self._t0) or 1.0
        return self.p0 + (t - self._t0) / span * (self.p1 - self.p0)

    def labels(self) -> list[tuple[float, str]]:
        """(pixel, text) of every tick inside the axis."""
        # log ticks (1, 2, 5 x 10^k) with one significant digit, however small (never "0" for 10^-7)
        return [(float(self(t)), format_number(t, decimals=self.dec) if self.dec is not None
                 else format_number(t, 1, max_decimals=max(6, -math.floor(math.log10(abs(t)))) if t else 6))
                for t in self.ticks if self.lo - 1e-12 <= t <= self.hi + 1e-12]


def _text(x, y, s, size=11, anchor="start", weight="", color=_TEXT, rotate: float | None = None) -> str:
    w = ' font-weight="bold"' if weight else ""
    rot = f' transform="rotate({rotate:g} {_num(x)} {_num(y)})"' if rotate is not None else ""
    return (f'<text x="{_num(x)}" y="{_num(y)}" font-size="{size}" text-anchor="{anchor}" fill="{color}"{w}{rot}>'
            f"{_esc(s)}</text>")


def _svg(height: float, body: list[str], label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {_num(height)}" width="{WIDTH}" '
            f'height="{_num(height)}" role="img" aria-label="{_esc(label)}" style="{_FONT}">'
            f"<title>{_esc(label)}</title>" + "".join(body) + "</svg>")


def _x_axis(sc: _Scale, y_top: float, y_axis: float, label: str) -> list[str]:
    out = []
    for px, txt in sc.labels():
        out.append(f'<line x1="{_num(px)}" x2="{_num(px)}" y1="{_num(y_top)}" y2="{_num(y_axis)}" '
                   f'stroke="{_GRID}"/>')
        out.append(_text(px, y_axis + 13, txt, 10, "middle"))
    out.append(f'<line x1="{_num(sc.p0)}" x2="{_num(sc.p1)}" y1="{_num(y_axis)}" y2="{_num(y_axis)}" '
               f'stroke="{_AXIS}"/>')
    if label:
        out.append(_text((sc.p0 + sc.p1) / 2, y_axis + 27, label, 10, "middle", color="#444444"))
    return out


def _y_axis(sc: _Scale, x0: float, x1: float) -> list[str]:
    """Horizontal grid lines and tick labels of a value axis on ``[x0, x1]`` (the axis line and its
    label are drawn by the caller)."""
    out = []
    for py_, txt in sc.labels():
        out.append(f'<line x1="{_num(x0)}" x2="{_num(x1)}" y1="{_num(py_)}" y2="{_num(py_)}" stroke="{_GRID}"/>')
        out.append(_text(x0 - 5, py_ + 4, txt, 10, "end"))
    return out


def _label_width(names: Sequence[str], size: float = 11) -> float:
    """Room for the longest label (px; ~0.6 em per character of a sans-serif face), 70..300."""
    return float(min(max(0.6 * size * max((len(n) for n in names), default=4) + 14, 70), 300))


# ------------------------------------------------------------------------------------ box strips
def box_strips(panels: Sequence[tuple[str, Mapping[str, np.ndarray]]], variants: Sequence[str],
               styles: Mapping[str, VariantStyle], ranges: Sequence[tuple[float, float]], axis_label: str,
               label: str, cols: int = 3, units: Sequence[str] | None = None) -> str:
    """One SVG of box strips: a panel per ``(title, {variant: values})`` (display units, NaNs
    dropped), one row per variant in ``variants`` order, on the value axis ``ranges[i]`` of panel i
    (from :func:`~twinsweep.sweep.plotting.axis_range`). Box: quartiles (type-7 quantiles, as
    ``numpy.quantile`` and the aggregate table); thick line: median; whiskers (in the variant's line
    style): the furthest values within 1.5 IQR of the box; dots: every value. Up to ``cols`` panels
    side by side, each row of panels with the variant labels on its left. ``label``: the chart's
    accessible name. ``units``: each panel's display unit (``"h"``, ``"%"``, ``"kW"``; None: none),
    given in the boxes' hover texts. Returns the ``<svg>`` text."""
    cols = max(1, min(cols, len(panels) or 1))
    units = list(units) if units is not None else [""] * len(panels)
    lw = _label_width(variants)
    gap, rh, head, foot = 26.0, 17.0, 22.0, 34.0
    pw = (WIDTH - lw - (cols - 1) * gap - 8) / cols
    ph = head + rh * len(variants) + foot
    body: list[str] = []
    for k, (title, data) in enumerate(panels):
        r, c = divmod(k, cols)
        x0 = lw + c * (pw + gap)
        y0 = r * (ph + 8)
        top = y0 + head
        if c == 0:
            for i, v in enumerate(variants):
                cy = top + i * rh + rh / 2
                body.append(_text(lw - 8, cy + 4, v, 11, "end"))
        for i in range(0, len(variants), 2):
            body.append(f'<rect x="{_num(x0)}" y="{_num(top + i * rh)}" width="{_num(pw)}" height="{_num(rh)}" '
                        'fill="#f5f5f5"/>')
        lo, hi = ranges[k]
        sc = _Scale(lo, hi, x0 + 4, x0 + pw - 4)
        body += _x_axis(sc, top, top + rh * len(variants), axis_label)
        body.append(_text(x0 + pw / 2, y0 + 15, title, 11, "middle", weight="bold"))
        for i, v in enumerate(variants):
            d = np.asarray(data.get(v, ()), dtype="float64")
            d = d[~np.isnan(d)]
            cy = top + i * rh + rh / 2
            if not len(d):
                body.append(_text(x0 + 8, cy + 4, "no runs", 10, color="#666666"))
                continue
            body.append(_box(sc, d, cy, styles[v], v, _suffix(units[k])))
    rows = -(-len(panels) // cols) if panels else 1
    return _svg(rows * (ph + 8), body, label)


def _quartiles(d: np.ndarray) -> tuple[float, float, float]:
    """Type-7 quartiles and median of ``d`` (no NaN, not empty), bit for bit as
    ``numpy.quantile(d, [0.25, 0.5, 0.75])``, from one sort (:func:`sweep.aggregate.lerp`)."""
    s = np.sort(d)
    lo, hi, g = quantile_positions(len(s), _QUARTILES)
    q1, med, q3 = lerp(s[lo], s[hi], g).tolist()
    return q1, med, q3


_QUARTILES = np.array([0.25, 0.5, 0.75])


def _suffix(unit: str) -> str:
    """A display unit as written after a number: ``" h"``, ``"%"`` (no space), ``""``."""
    return unit if unit in ("", "%") else f" {unit}"


def _box(sc: _Scale, d: np.ndarray, cy: float, st: VariantStyle, name: str, unit: str = "") -> str:
    """One variant's box (see :func:`box_strips`), its hover text in the axis' ``unit``."""
    q1, med, q3 = _quartiles(d)
    iqr = q3 - q1
    lo, hi = d[d >= q1 - 1.5 * iqr].min(), d[d <= q3 + 1.5 * iqr].max()
    X = sc(np.array([lo, q1, med, q3, hi])).tolist()
    dash = f' stroke-dasharray="{st.dash}"' if st.dash else ""
    tip = (f"{name}: median {format_number(med)}{unit}, quartiles {format_number(q1)}–{format_number(q3)}{unit}, "
           f"range {format_number(d.min())}–{format_number(d.max())}{unit}, {len(d)} run(s)")
    parts = [f"<g><title>{_esc(tip)}</title>",
             f'<line x1="{_num(X[0])}" x2="{_num(X[1])}" y1="{_num(cy)}" y2="{_num(cy)}" stroke="{st.color}" '
             f'stroke-width="1.3"{dash}/>',
             f'<line x1="{_num(X[3])}" x2="{_num(X[4])}" y1="{_num(cy)}" y2="{_num(cy)}" stroke="{st.color}" '
             f'stroke-width="1.3"{dash}/>',
             f'<path d="M{_num(X[0])} {_num(cy - 3)}V{_num(cy + 3)}M{_num(X[4])} {_num(cy - 3)}V{_num(cy + 3)}" '
             f'stroke="{st.color}" stroke-width="1.3"/>',
             f'<rect x="{_num(X[1])}" y="{_num(cy - 5)}" width="{_num(max(X[3] - X[1], 0.0))}" height="10" '
             f'fill="{st.color}" fill-opacity="0.18" stroke="{st.color}" stroke-width="1.3"/>',
             f'<line x1="{_num(X[2])}" x2="{_num(X[2])}" y1="{_num(cy - 6)}" y2="{_num(cy + 6)}" stroke="#111111" '
             'stroke-width="2"/>']
    xs = sc(d).tolist()
    jit = (np.linspace(-3.5, 3.5, len(d)) if len(d) > 1 else np.zeros(1)).tolist()
    parts += [f'<circle cx="{_num(x)}" cy="{_num(cy + j)}" r="2.2" fill="{st.color}" fill-opacity="0.85"/>'
              for x, j in zip(xs, jit)]
    return "".join(parts) + "</g>"


# ----------------------------------------------------------------------------------- line panels
@dataclasses.dataclass
class Series:
    """One variant's line: ``x``, ``y`` (display units, same length); ``step``: ``y[i]`` holds on
    ``[x[i], x[i+1])`` (a step function, e.g. a timeline of bin averages)."""

    variant: str
    x: np.ndarray
    y: np.ndarray
    step: bool = False


@dataclasses.dataclass
class LinePanel:
    """One panel of :func:`line_panels`: its ``series``, value range ``ylim`` (display units, from
    :func:`~twinsweep.sweep.plotting.axis_range`), ``xlim``, axis labels and ``title``; ``symlog``:
    the linear range of a symmetric-log value axis (None: linear)."""

    series: list[Series]
    ylim: tuple[float, float]
    xlim: tuple[float, float]
    ylabel: str = ""
    xlabel: str = ""
    title: str = ""
    symlog: float | None = None


def _path(sx: _Scale, sy: _Scale, s: Series) -> str:
    x = np.asarray(s.x, dtype="float64")
    y = np.asarray(s.y, dtype="float64")
    ok = ~(np.isnan(x) | np.isnan(y))
    x, y = x[ok], y[ok]
    if not len(x):
        return ""
    px, py = np.round(sx(x), 1), np.round(sy(y), 1)
    if not s.step:  # Python floats: formatted ~40 % faster than numpy scalars, same text
        return "M" + "L".join(f"{_num(a)} {_num(b)}" for a, b in zip(px.tolist(), py.tolist()))
    keep = np.r_[True, py[1:] != py[:-1]]  # a step function changes only where its value does
    end = px[-1] if len(px) < 2 else px[-1] + (px[-1] - px[-2])
    px, py = px[keep], py[keep]
    col = np.floor(px).astype("int64")
    if len(px) <= 2 * (abs(sx.p1 - sx.p0) + 1):
        cmds = [f"M{_num(px[0])} {_num(py[0])}"] + [f"H{_num(a)}V{_num(b)}"
                                                    for a, b in zip(px[1:].tolist(), py[1:].tolist())]
        return "".join(cmds) + f"H{_num(end)}"
    # M4: per pixel column the first, lowest, highest and last value
    starts = np.flatnonzero(np.r_[True, col[1:] != col[:-1]])
    last = np.r_[starts[1:] - 1, len(py) - 1]
    lo, hi = np.minimum.reduceat(py, starts).tolist(), np.maximum.reduceat(py, starts).tolist()
    px, py, last = px.tolist(), py.tolist(), last.tolist()
    cmds = [f"M{_num(px[0])} {_num(py[0])}"]
    for i, st in enumerate(starts.tolist()):
        if i:
            cmds.append(f"H{_num(px[st])}V{_num(py[st])}")
        vs = (lo[i], hi[i], py[last[i]]) if py[st] <= py[last[i]] else (hi[i], lo[i], py[last[i]])
        cmds.append("".join(f"V{_num(v)}" for v in vs))
    return "".join(cmds) + f"H{_num(end)}"


def _panel_frame(p, sx, sy, x0: float, y0: float, ya: float, yb: float, pw: float, left: float) -> list[str]:
    """A panel's title, both axes with their ticks and labels, and its left axis line (SVG
    elements); ``p`` has ``title``, ``xlabel`` and ``ylabel``; ``ya``/``yb``: top/bottom (px)."""
    out = []
    if p.title:
        out.append(_text(x0 + pw / 2, y0 + 14, p.title, 11, "middle", weight="bold"))
    out += _y_axis(sy, x0, x0 + pw)
    out += _x_axis(sx, ya, yb, p.xlabel)
    out.append(f'<line x1="{_num(x0)}" x2="{_num(x0)}" y1="{_num(ya)}" y2="{_num(yb)}" stroke="{_AXIS}"/>')
    if p.ylabel:
        out.append(_text(x0 - left + 12, (ya + yb) / 2, p.ylabel, 10, "middle", color="#444444", rotate=-90))
    return out


def line_panels(panels: Sequence[LinePanel], variants: Sequence[str], styles: Mapping[str, VariantStyle],
                label: str, cols: int = 1, panel_height: float = 170.0) -> str:
    """One SVG of line panels (``cols`` side by side, rows below one another) under one legend row
    of every variant that has a line (in ``variants`` order, colour and line style as drawn). Each
    panel has its own value axis (label left, ticks from :func:`nice_ticks`, or decades for a
    symlog axis) and x axis (label below); a step series is drawn as steps (:class:`Series`).
    ``label``: the chart's accessible name. Returns the ``<svg>`` text."""
    cols = max(1, min(cols, len(panels) or 1))
    shown = [v for v in variants if any(s.variant == v for p in panels for s in p.series)]
    # legend: as many columns as fit, entries in variants order
    ew = _label_width(shown, 11) + 34
    per_row = max(1, int(WIDTH // ew))
    leg_rows = -(-len(shown) // per_row) if shown else 0
    body: list[str] = []
    for i, v in enumerate(shown):
        r, c = divmod(i, per_row)
        x, y = 8 + c * ew, 14 + r * 18
        st = styles[v]
        dash = f' stroke-dasharray="{st.dash}"' if st.dash else ""
        body.append(f'<line x1="{_num(x)}" x2="{_num(x + 26)}" y1="{_num(y - 4)}" y2="{_num(y - 4)}" '
                    f'stroke="{st.color}" stroke-width="2"{dash}/>')
        body.append(_text(x + 32, y, v, 11))
    top0 = 8 + leg_rows * 18
    left, gap, head, foot = 64.0, 30.0, 20.0, 34.0
    pw = (WIDTH - left - (cols - 1) * (gap + left) - 10) / cols
    for k, p in enumerate(panels):
        r, c = divmod(k, cols)
        x0 = left + c * (pw + gap + left)
        y0 = top0 + r * (panel_height + head + foot)
        ya, yb = y0 + head, y0 + head + panel_height
        sy = _Scale(p.ylim[0], p.ylim[1], yb, ya, symlog=p.symlog, n=5)
        sx = _Scale(p.xlim[0], p.xlim[1], x0, x0 + pw, n=8)
        body += _panel_frame(p, sx, sy, x0, y0, ya, yb, pw, left)
        clip = f"clip-{hashlib.sha1(label.encode()).hexdigest()[:8]}-{k}"  # unique on the page, deterministic
        body.append(f'<clipPath id="{clip}"><rect x="{_num(x0)}" y="{_num(ya - 2)}" width="{_num(pw)}" '
                    f'height="{_num(panel_height + 4)}"/></clipPath><g clip-path="url(#{clip})" fill="none">')
        for s in p.series:
            d = _path(sx, sy, s)
            if d:
                st = styles[s.variant]
                dash = f' stroke-dasharray="{st.dash}"' if st.dash else ""
                body.append(f'<path d="{d}" stroke="{st.color}" stroke-width="1.3"{dash}><title>{_esc(s.variant)}'
                            "</title></path>")
        body.append("</g>")
    rows = -(-len(panels) // cols) if panels else 0
    return _svg(top0 + rows * (panel_height + head + foot), body, label)


# -------------------------------------------------------------------------------- scatter panels
@dataclasses.dataclass
class ScatterPoint:
    """One variant in a :class:`ScatterPanel`: its point ``(x, y)`` with error bars ``±xerr`` /
    ``±yerr`` (display units; NaN or 0: none), ``filled`` (False: a hollow marker) and its single
    observations ``dots_x`` / ``dots_y`` drawn as small dots (same length)."""

    variant: str
    x: float
    y: float
    xerr: float = math.nan
    yerr: float = math.nan
    filled: bool = True
    dots_x: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0))
    dots_y: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0))


@dataclasses.dataclass
class ScatterPanel:
    """One panel of :func:`scatter_panels`: its ``points``, axis ranges ``xlim`` / ``ylim`` (display
    units; from :func:`~twinsweep.sweep.plotting.axis_range`, or ``0 < lo < hi`` for a log axis),
    ``xlog`` / ``ylog`` (logarithmic axis, ticks at 1, 2, 5 × 10^k), axis labels, ``title`` and
    ``line``: points joined by a thin grey line in the given order (e.g. a Pareto front; may be empty)."""

    points: list[ScatterPoint]
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    xlabel: str = ""
    ylabel: str = ""
    title: str = ""
    xlog: bool = False
    ylog: bool = False
    line: list[tuple[float, float]] = dataclasses.field(default_factory=list)


def scatter_panels(panels: Sequence[ScatterPanel], variants: Sequence[str], styles: Mapping[str, VariantStyle],
                   label: str, legend_title: Sequence[str] = (), cols: int = 3, panel_height: float = 260.0) -> str:
    """One SVG of scatter panels (up to ``cols`` side by side) with a legend column on the right:
    ``legend_title`` lines, then every variant that has a point (``variants`` order) as its marker on
    a line in its colour and line style. A point is a circle (filled, or white inside when not
    ``filled``) with its error bars in the variant's line style; its dots are drawn beneath, half
    transparent. Everything is clipped to the panel. ``label``: the chart's accessible name.
    Returns the ``<svg>`` text."""
    cols = max(1, min(cols, len(panels) or 1))
    shown = [v for v in variants if any(q.variant == v for p in panels for q in p.points)]
    lw = max(_label_width(shown, 11) + 34, _label_width(list(legend_title), 10) - 14)
    left, gap, head, foot = 64.0, 20.0, 20.0, 38.0
    pw = (WIDTH - lw - cols * left - (cols - 1) * gap - 10) / cols
    body: list[str] = []
    lx = WIDTH - lw + 4
    for i, t in enumerate(legend_title):
        body.append(_text(lx, 16 + 14 * i, t, 10, color="#444444"))
    ly0 = 16 + 14 * len(legend_title) + (8 if legend_title else 0)
    for i, v in enumerate(shown):
        st, y = styles[v], ly0 + 18 * i
        dash = f' stroke-dasharray="{st.dash}"' if st.dash else ""
        body.append(f'<line x1="{_num(lx)}" x2="{_num(lx + 24)}" y1="{_num(y - 4)}" y2="{_num(y - 4)}" '
                    f'stroke="{st.color}" stroke-width="1.3"{dash}/>')
        body.append(f'<circle cx="{_num(lx + 12)}" cy="{_num(y - 4)}" r="4" fill="{st.color}"/>')
        body.append(_text(lx + 30, y, v, 11))
    for k, p in enumerate(panels):
        r, c = divmod(k, cols)
        x0 = left + c * (pw + gap + left)
        y0 = r * (panel_height + head + foot)
        ya, yb = y0 + head, y0 + head + panel_height
        sx = _Scale(p.xlim[0], p.xlim[1], x0, x0 + pw, n=6, log=p.xlog)
        sy = _Scale(p.ylim[0], p.ylim[1], yb, ya, n=6, log=p.ylog)
        body += _panel_frame(p, sx, sy, x0, y0, ya, yb, pw, left)
        clip = f"clip-{hashlib.sha1(label.encode()).hexdigest()[:8]}-s{k}"  # unique on the page, deterministic
        body.append(f'<clipPath id="{clip}"><rect x="{_num(x0)}" y="{_num(ya)}" width="{_num(pw)}" '
                    f'height="{_num(panel_height)}"/></clipPath><g clip-path="url(#{clip})">')
        for q in p.points:  # every block's dot beneath the means
            st = styles[q.variant]
            X, Y = sx(np.asarray(q.dots_x, dtype="float64")), sy(np.asarray(q.dots_y, dtype="float64"))
            body += [f'<circle cx="{_num(a)}" cy="{_num(b)}" r="2" fill="{st.color}" fill-opacity="0.5"/>'
                     for a, b in zip(X.tolist(), Y.tolist()) if math.isfinite(a) and math.isfinite(b)]
        pts = [(float(sx(a)), float(sy(b))) for a, b in p.line]
        pts = [(a, b) for a, b in pts if math.isfinite(a) and math.isfinite(b)]
        if len(pts) > 1:
            body.append('<path d="M' + "L".join(f"{_num(a)} {_num(b)}" for a, b in pts) +
                        '" fill="none" stroke="#808080" stroke-width="0.8"/>')
        for q in p.points:
            body.append(_marker(sx, sy, q, styles[q.variant]))
        body.append("</g>")
    rows = -(-len(panels) // cols) if panels else 0
    height = max(rows * (panel_height + head + foot), ly0 + 18 * len(shown))
    return _svg(height, body, label)


def _mean_sd(value: float, err: float) -> str:
    """A point's value and its error bar as the report's tables show them: the value with 3
    significant digits, the spread with as many decimals (:func:`core.metrics.format_spread`: ``12.3 ±
    0.7``, not ``± 0.727``); no spread when the bar is 0 or NaN."""
    text = format_number(value)
    if not err > 0:
        return text
    decimals = len(text.split(".", 1)[1]) if "." in text else 0
    return f"{text} ± {format_spread(err, decimals)}"


def _marker(sx: _Scale, sy: _Scale, q: ScatterPoint, st: VariantStyle) -> str:
    cx, cy = float(sx(q.x)), float(sy(q.y))
    if not (math.isfinite(cx) and math.isfinite(cy)):
        return ""
    dash = f' stroke-dasharray="{st.dash}"' if st.dash else ""
    tip = f"{q.variant}: {_mean_sd(q.x, q.xerr)}, {_mean_sd(q.y, q.yerr)}"
    parts = [f"<g><title>{_esc(tip)}</title>"]
    if q.xerr > 0:  # NaN compares False: no bar
        a, b = float(sx(q.x - q.xerr)), float(sx(q.x + q.xerr))
        a = a if math.isfinite(a) else float(sx.p0)  # a log axis has no place for <= 0: bar to the edge
        parts.append(f'<path d="M{_num(a)} {_num(cy)}H{_num(b)}M{_num(a)} {_num(cy - 2)}V{_num(cy + 2)}'
                     f'M{_num(b)} {_num(cy - 2)}V{_num(cy + 2)}" stroke="{st.color}" stroke-width="1"{dash}/>')
    if q.yerr > 0:
        a, b = float(sy(q.y - q.yerr)), float(sy(q.y + q.yerr))
        a = a if math.isfinite(a) else float(sy.p0)
        parts.append(f'<path d="M{_num(cx)} {_num(a)}V{_num(b)}M{_num(cx - 2)} {_num(a)}H{_num(cx + 2)}'
                     f'M{_num(cx - 2)} {_num(b)}H{_num(cx + 2)}" stroke="{st.color}" stroke-width="1"{dash}/>')
    fill = st.color if q.filled else "#ffffff"
    parts.append(f'<circle cx="{_num(cx)}" cy="{_num(cy)}" r="4.5" fill="{fill}" stroke="{st.color}" '
                 'stroke-width="1.5"/>')
    return "".join(parts) + "</g>"
