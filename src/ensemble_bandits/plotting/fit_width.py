"""A figure's title and footer no wider than its panels.

Saved with a tight bounding box, a figure is as wide as its widest text: a one-panel figure under a
title twice the panel's width used about half of the image's width for its plot.  The figure widens
(up to a page's width) until its title fits in :data:`TITLE_LINES` lines the panels' width, and the
title (at its spaces) and the footer (at its " · " separators) are broken into lines that width.
"""
from __future__ import annotations

from .legibility import PRINT_WIDTH_IN, _renderer

TITLE_LINES = 2        # the lines a long title may take before the figure widens further
SLACK = 1.1            # room for words that do not break where the width would


def panels_width(fig, renderer) -> float:
    """Display width (pixels) of the visible panels with their tick and axis labels."""
    boxes = [ax.get_tightbbox(renderer) for ax in fig.axes if ax.get_visible()]
    return max(b.x1 for b in boxes) - min(b.x0 for b in boxes) if boxes else fig.bbox.width


def widening(fig, renderer=None) -> float:
    """Inches the figure should widen so its title fits in TITLE_LINES lines the panels' width (the
    figure no wider than PRINT_WIDTH_IN, and never narrowed); 0 when the title fits already."""
    renderer = renderer or _renderer(fig)
    title, span = fig._suptitle, panels_width(fig, renderer)
    if title is None or title.get_window_extent(renderer).width <= span:
        return 0.0
    want = SLACK * title.get_window_extent(renderer).width / TITLE_LINES - span
    room = PRINT_WIDTH_IN - fig.get_figwidth()
    return max(0.0, min(want / fig.dpi, room))


def _words(text: str) -> list[str]:
    """The words of ``text``, a mathtext span ($...$) with spaces kept whole."""
    out = []
    for word in text.split(" "):
        if out and out[-1].count("$") % 2:
            out[-1] += " " + word
        else:
            out.append(word)
    return out


def _fill(text, parts, sep: str, width: float, renderer) -> list[str]:
    """``parts`` filled greedily into lines of ``text``'s font no wider than ``width`` pixels."""
    lines, line = [], []
    for part in parts:
        text.set_text(sep.join(line + [part]))
        if line and text.get_window_extent(renderer).width > width:
            lines.append(sep.join(line))
            line = []
        line.append(part)
    return lines + [sep.join(line)]


def wrap_to(text, sep: str, width: float, renderer) -> float:
    """Break ``text`` (a matplotlib Text) at ``sep`` into as few lines no wider than ``width`` pixels
    as it takes (a part wider than that keeps a line of its own), of about equal widths (the
    narrowest width that takes no more lines); returns the inches of height it gained."""
    before = text.get_window_extent(renderer).height
    parts = _words(text.get_text()) if sep == " " else text.get_text().split(sep)
    n = len(_fill(text, parts, sep, width, renderer))
    lo, hi = 0.0, width
    while hi - lo > 2:        # pixels
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if len(_fill(text, parts, sep, mid, renderer)) <= n else (mid, hi)
    text.set_text("\n".join(_fill(text, parts, sep, hi, renderer)))
    return (text.get_window_extent(renderer).height - before) / text.figure.dpi


def wrap_to_panels(fig, footer, renderer=None) -> tuple[float, float]:
    """Break the title and ``footer`` wider than the panels into lines their width; returns the
    inches of height (title, footer) they gained."""
    renderer = renderer or _renderer(fig)
    span = panels_width(fig, renderer)
    gained = []
    for text, sep in ((fig._suptitle, " "), (footer, " · ")):
        wide = text is not None and text.get_window_extent(renderer).width > span
        gained.append(wrap_to(text, sep, span, renderer) if wide else 0.0)
    return gained[0], gained[1]
