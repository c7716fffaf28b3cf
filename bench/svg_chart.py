"""A line chart as SVG text, in plain Python (no Django, no plotting library): the cost
curves of ``make bench-scale`` (``bench/scale.py``). The x axis is logarithmic (the data
grows 1×, 10×, 100×), the y axis linear from zero, one line per series.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

WIDTH, HEIGHT = 600, 340
LEFT, RIGHT, TOP, BOTTOM = 70, 170, 40, 50
# Colour-blind-safe (Okabe–Ito), one per series in order.
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7")
MARKERS = ("circle", "square", "diamond", "triangle")


def nice_ceiling(value: float) -> float:
    """The smallest 1, 2, 2.5 or 5 × 10ⁿ at or above ``value`` (an axis's top)."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        if value <= step * power * (1 + 1e-9):
            return step * power
    return 10.0 * power


def _fmt(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}".rstrip("0").rstrip(".")
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _marker(kind: str, x: float, y: float, colour: str) -> str:
    if kind == "none":
        return ""
    if kind == "square":
        return f'<rect x="{x - 4:.1f}" y="{y - 4:.1f}" width="8" height="8" fill="{colour}"/>'
    if kind == "diamond":
        points = f"{x:.1f},{y - 5:.1f} {x + 5:.1f},{y:.1f} {x:.1f},{y + 5:.1f} {x - 5:.1f},{y:.1f}"
        return f'<polygon points="{points}" fill="{colour}"/>'
    if kind == "triangle":
        points = f"{x:.1f},{y - 5:.1f} {x + 5:.1f},{y + 4:.1f} {x - 5:.1f},{y + 4:.1f}"
        return f'<polygon points="{points}" fill="{colour}"/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{colour}"/>'


def line_chart(
    title: str,
    xs: Sequence[float],
    series: Mapping[str, Sequence[float | None]],
    *,
    x_labels: Sequence[str] | None = None,
    y_label: str = "ms",
    dashed: Mapping[str, str] | None = None,
) -> str:
    """An SVG document: one line per entry of ``series`` over ``xs`` (all above zero;
    a ``None`` value is a point not measured, and breaks the line there). ``dashed``
    draws a series as a thin dashed line in the colour of the series it names (a
    baseline beside its measurement)."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    low, high = math.log10(min(xs)), math.log10(max(xs))
    span = (high - low) or 1.0
    values = [v for line in series.values() for v in line if v is not None]
    top = nice_ceiling(max(values, default=1.0) * 1.05)

    def px(x: float) -> float:
        return LEFT + (math.log10(x) - low) / span * plot_w

    def py(y: float) -> float:
        return TOP + plot_h - y / top * plot_h

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12" role="img" '
        f'aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        f'<text x="{LEFT}" y="22" font-size="14" font-weight="bold">{escape(title)}</text>',
    ]
    for i in range(5):  # horizontal grid and y ticks
        value = top * i / 4
        y = py(value)
        out.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#dddddd"/>'
        )
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt(value)}</text>')
    for i, x in enumerate(xs):  # vertical grid and x ticks
        label = x_labels[i] if x_labels else _fmt(x)
        out.append(
            f'<line x1="{px(x):.1f}" y1="{TOP}" x2="{px(x):.1f}" y2="{TOP + plot_h}" '
            'stroke="#eeeeee"/>'
        )
        out.append(
            f'<text x="{px(x):.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">'
            f"{escape(label)}</text>"
        )
    out.append(
        f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 10}" text-anchor="middle">'
        "data size (log scale)</text>"
    )
    out.append(
        f'<text x="16" y="{TOP + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 16 {TOP + plot_h / 2:.1f})">{escape(y_label)}</text>'
    )
    out.append(
        f'<path d="M{LEFT} {TOP} V{TOP + plot_h} H{LEFT + plot_w}" fill="none" stroke="#333333"/>'
    )
    dashed = dashed or {}
    solid = [name for name in series if name not in dashed]
    colours = {name: COLOURS[n % len(COLOURS)] for n, name in enumerate(solid)}
    markers = {name: MARKERS[n % len(MARKERS)] for n, name in enumerate(solid)}
    for name, of in dashed.items():
        colours[name], markers[name] = colours[of], "none"
    for n, (name, line) in enumerate(series.items()):
        colour, marker = colours[name], markers[name]
        stroke = (
            'stroke-width="1.5" stroke-dasharray="5 4"' if name in dashed else 'stroke-width="2"'
        )
        segments: list[list[tuple[float, float]]] = [[]]
        for x, measured in zip(xs, line, strict=True):
            if measured is None:
                segments.append([])
                continue
            segments[-1].append((px(x), py(measured)))
        for points in segments:
            if len(points) > 1:
                path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
                out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" {stroke}/>')
            out += [m for x, y in points if (m := _marker(marker, x, y, colour))]
        legend_y = TOP + 10 + n * 20
        legend_x = LEFT + plot_w + 16
        if name in dashed:
            out.append(
                f'<line x1="{legend_x - 6}" y1="{legend_y - 4}" x2="{legend_x + 6}" '
                f'y2="{legend_y - 4}" stroke="{colour}" {stroke}/>'
            )
        else:
            out.append(_marker(marker, legend_x, legend_y - 4, colour))
        out.append(f'<text x="{legend_x + 10}" y="{legend_y}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
