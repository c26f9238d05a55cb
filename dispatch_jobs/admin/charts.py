"""Charts drawn on the server as inline SVG: no script, no external resource.

Each chart is a list of ``Point`` (a label and two counts, completed and
failed) turned into markup whose every text part is escaped."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

WIDTH, HEIGHT = 640, 150
LEFT, BOTTOM, TOP = 40, 18, 8
COMPLETED, FAILED = "dj-chart-completed", "dj-chart-failed"


@dataclass(frozen=True)
class Point:
    label: str
    completed: int
    failed: int


def _ceiling(value: int) -> int:
    """A round axis maximum at or above ``value`` (1, 2, 5 times a power of 10)."""
    step = 1
    while True:
        for factor in (1, 2, 5):
            if value <= step * factor:
                return step * factor
        step *= 10


def _frame(title: str, peak: int, first: str, last: str, body: str, summary: str) -> SafeString:
    plot_bottom = HEIGHT - BOTTOM
    return format_html(
        '<svg class="dj-chart" viewBox="0 0 {w} {h}" width="100%" role="img" '
        'aria-label="{summary}" xmlns="http://www.w3.org/2000/svg">'
        "<title>{title}</title>"
        '<line class="dj-chart-axis" x1="{l}" y1="{t}" x2="{l}" y2="{b}"/>'
        '<line class="dj-chart-axis" x1="{l}" y1="{b}" x2="{w}" y2="{b}"/>'
        '<text class="dj-chart-label" x="{lx}" y="{ty}" text-anchor="end">{peak}</text>'
        '<text class="dj-chart-label" x="{lx}" y="{b}" text-anchor="end">0</text>'
        '<text class="dj-chart-label" x="{l}" y="{h}">{first}</text>'
        '<text class="dj-chart-label" x="{w}" y="{h}" text-anchor="end">{last}</text>'
        "{body}</svg>",
        w=WIDTH,
        h=HEIGHT,
        l=LEFT,
        t=TOP,
        b=plot_bottom,
        lx=LEFT - 4,
        ty=TOP + 8,
        peak=peak,
        first=first,
        last=last,
        title=title,
        summary=summary,
        body=mark_safe(body),  # noqa: S308 - built below from numbers and escaped labels
    )


def _summary(completed: int, failed: int, span: str) -> str:
    return f"{span}: {completed:,} completed, {failed:,} failed"


def bars(points: list[Point], title: str, span: str) -> SafeString:
    """Stacked bars, one per point: completed below, failed on top."""
    peak = _ceiling(max((p.completed + p.failed for p in points), default=0) or 1)
    plot_w, plot_h = WIDTH - LEFT, HEIGHT - BOTTOM - TOP
    slot = plot_w / max(len(points), 1)
    parts = []
    for i, point in enumerate(points):
        x = LEFT + i * slot + slot * 0.1
        done_h = plot_h * point.completed / peak
        fail_h = plot_h * point.failed / peak
        base = HEIGHT - BOTTOM
        tip = f"{point.label}: {point.completed:,} completed, {point.failed:,} failed"
        parts.append(
            f'<g class="dj-chart-bar"><title>{escape(tip)}</title>'
            f'<rect class="{COMPLETED}" x="{x:.1f}" y="{base - done_h:.1f}" '
            f'width="{slot * 0.8:.1f}" height="{done_h:.1f}"/>'
            f'<rect class="{FAILED}" x="{x:.1f}" y="{base - done_h - fail_h:.1f}" '
            f'width="{slot * 0.8:.1f}" height="{fail_h:.1f}"/></g>'
        )
    first = points[0].label if points else ""
    last = points[-1].label if points else ""
    summary = _summary(sum(p.completed for p in points), sum(p.failed for p in points), span)
    return _frame(title, peak, first, last, "".join(parts), summary)


def lines(
    completed: list[int], failed: list[int], span_labels: tuple[str, str], title: str, span: str
) -> SafeString:
    """Two lines over the same evenly spaced points, completed and failed (for
    long series: a day of minutes). ``span_labels`` name the first and last
    point. A flat run is drawn from its two ends only, so a quiet day costs a
    few points, not one per minute."""
    peak = _ceiling(max(max(completed, default=0), max(failed, default=0)) or 1)
    plot_w, plot_h = WIDTH - LEFT, HEIGHT - BOTTOM - TOP
    step = plot_w / max(len(completed) - 1, 1)
    scale = plot_h / peak
    base = HEIGHT - BOTTOM

    def path(values: list[int]) -> str:
        return " ".join(
            f"{LEFT + i * step:.1f},{base - values[i] * scale:.1f}" for i in _corners(values)
        )

    body = (
        f'<polyline class="{COMPLETED}" fill="none" points="{path(completed)}"/>'
        f'<polyline class="{FAILED}" fill="none" points="{path(failed)}"/>'
    )
    first, last = span_labels
    summary = _summary(sum(completed), sum(failed), span)
    return _frame(title, peak, first, last, body, summary)


def _corners(values: list[int]) -> list[int]:
    """The indexes a polyline through ``values`` needs: the ends, and each
    point whose value differs from a neighbour's (the inside of a flat run
    lies on the line between its ends)."""
    last = len(values) - 1
    return [
        i
        for i in range(len(values))
        if i in (0, last) or values[i] != values[i - 1] or values[i] != values[i + 1]
    ]
