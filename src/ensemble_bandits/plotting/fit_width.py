"""A figure's title and footer no wider than its panels.

Saved with a tight bounding box, a figure is as wide as its widest text: a one-panel figure under a
title twice the panel's width used about half of the image's width for its plot.  The figure widens
(up to a page's width) until its title fits in :data:`TITLE_LINES` lines the panels' width, and the
title (at its spaces) and the footer (at its " · " separators) are broken into lines of about equal
width, no wider than the panels.
"""
from __future__ import annotations

from .legibility import PRINT_WIDTH_IN, _renderer

TITLE_LINES = 2        # the lines a long title may take before the figure widens further


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
    want = lines_width(title, " ", TITLE_LINES, renderer) + 4 - span     # 4 px: rounding of the layout
    return max(0.0, min(want / fig.dpi, PRINT_WIDTH_IN - fig.get_figwidth()))


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


def _parts(text: str, sep: str) -> list[str]:
    return _words(text) if sep == " " else text.split(sep)


def lines_width(text, sep: str, lines: int, renderer) -> float:
    """The narrowest width (pixels) in which ``text`` (a matplotlib Text) breaks at ``sep`` into at
    most ``lines`` lines; the text is left as it was."""
    original = text.get_text()
    parts = _parts(original, sep)
    lo, hi = 0.0, text.get_window_extent(renderer).width
    while hi - lo > 2:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if len(_fill(text, parts, sep, mid, renderer)) <= lines else (mid, hi)
    text.set_text(original)
    return hi


def wrap_to(text, sep: str, width: float, renderer) -> float:
    """Break ``text`` (a matplotlib Text) at ``sep`` into as few lines no wider than ``width`` pixels
    as it takes (a part wider than that keeps a line of its own), of about equal widths (the
    narrowest width that takes no more lines); returns the inches of height it gained."""
    before = text.get_window_extent(renderer).height
    original = text.get_text()
    parts = _parts(original, sep)
    n = len(_fill(text, parts, sep, width, renderer))
    text.set_text(original)
    text.set_text("\n".join(_fill(text, parts, sep, lines_width(text, sep, n, renderer), renderer)))
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
