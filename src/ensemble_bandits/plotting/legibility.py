"""Figures read at a page's width: what every plot kind's figure goes through before it is saved
(:func:`make_legible`), and the check that fails a figure a reader could not read
(:func:`figure_problems`).

A figure is judged as printed :data:`PRINT_WIDTH_IN` inches wide (a page's text width): no text
smaller than :data:`MIN_PRINTED_PT` points there, no two tick labels of an axis overlapping, no
legend inside a panel covering its data, no legend beside the panels covering a tick label, no
table text running over its cell.
"""
from __future__ import annotations

import re

import matplotlib.text as mtext
from matplotlib.ticker import FixedFormatter

PRINT_WIDTH_IN = 7.0
MIN_PRINTED_PT = 6.0
_PAD_PX = 1.0


def _renderer(fig):
    """The figure's renderer after a layout pass (ticks, text positions) that paints nothing."""
    fig.draw_without_rendering()
    return fig.canvas.get_renderer()


def _visible_texts(fig):
    out = []
    for t in fig.findobj(mtext.Text):
        if t.get_visible() and t.get_text().strip() and (t.axes is None or t.axes.get_visible()):
            out.append(t)
    return out


def printed_scale(fig, renderer=None) -> float:
    """How much the saved figure (tight bounding box) shrinks when printed PRINT_WIDTH_IN wide
    (1 when it is narrower: it is printed at its own size)."""
    renderer = renderer or _renderer(fig)
    width_in = fig.get_tightbbox(renderer).width
    return min(1.0, PRINT_WIDTH_IN / max(width_in, 1e-9))


def prettify(fig, pretty) -> None:
    """Every label, title and legend entry of ``fig`` (and fixed tick labels) through ``pretty``."""
    for t in fig.findobj(mtext.Text):
        s = t.get_text()
        if s:
            t.set_text(pretty(s))
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            fmt = axis.get_major_formatter()
            if isinstance(fmt, FixedFormatter):
                fmt.seq = [pretty(str(s)) for s in fmt.seq]


def raise_small_text(fig, renderer=None) -> bool:
    """Raise every text below the floor (MIN_PRINTED_PT at the printed width) to the floor; True if
    any changed (the caller lays the figure out again)."""
    renderer = renderer or _renderer(fig)
    floor = MIN_PRINTED_PT / printed_scale(fig, renderer) + 0.05
    fig._eb_text_floor = max(floor, getattr(fig, "_eb_text_floor", 0.0))   # for legends made later
    changed = False
    for t in _visible_texts(fig):
        if t.get_fontsize() < floor:
            t.set_fontsize(floor)
            changed = True
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                for lab in (tick.label1, tick.label2):
                    if lab.get_fontsize() < floor:
                        lab.set_fontsize(floor)
                        changed = True
            # ticks created later (at draw) take the axis' tick label size
            if any(t.get_fontsize() < floor for t in axis.get_ticklabels()):
                axis.set_tick_params(labelsize=floor)
                changed = True
    return changed


def _shown_ticks(axis, renderer):
    """(tick, label box) of the major ticks of ``axis`` whose label is drawn: visible, not blank,
    inside the view."""
    lo, hi = sorted(axis.get_view_interval())
    return [(t, t.label1.get_window_extent(renderer)) for t in axis.get_major_ticks()
            if t.label1.get_visible() and t.label1.get_text().strip() and lo <= t.get_loc() <= hi]


def _overlapping(axis, renderer) -> bool:
    boxes = [box for _t, box in _shown_ticks(axis, renderer)]
    return any(a.padded(_PAD_PX).overlaps(b) for a, b in zip(boxes, boxes[1:]))


def _named(axis) -> bool:
    """Whether the tick labels of ``axis`` are names (categories), not numbers."""
    return any(re.search(r"[A-Za-z]{2}", t.get_text()) for t in axis.get_ticklabels())


def upright_categories(fig, renderer=None) -> float:
    """Turn the named (categorical) x tick labels of an axis whose labels overlap to vertical, which
    keeps every name.  Returns the inches of height the turned labels need beyond what they had (0
    when nothing turned); the caller grows the figure by that and lays it out again."""
    renderer = renderer or _renderer(fig)
    turned = []
    for ax in fig.axes:
        if ax.get_visible() and _named(ax.xaxis) and _overlapping(ax.xaxis, renderer):
            before = max(t.get_window_extent(renderer).height for t in ax.get_xticklabels())
            for lab in ax.get_xticklabels():
                lab.set_rotation(90)
                lab.set_horizontalalignment("center")
            turned.append((ax, before))
    if not turned:
        return 0.0
    renderer = _renderer(fig)
    grow = max(max(t.get_window_extent(renderer).height for t in ax.get_xticklabels()) - before
               for ax, before in turned)
    return max(grow, 0.0) / fig.dpi


def thin_tick_labels(fig, renderer=None) -> None:
    """Blank a major tick label that would overlap the last one kept on its axis (log axes with
    ticks at 100, 200, ... read "100200" otherwise).  The axis' formatter is wrapped, so the labels
    stay blank when the figure is drawn again."""
    from matplotlib.ticker import FuncFormatter

    renderer = renderer or _renderer(fig)
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis in (ax.xaxis, ax.yaxis):
            if _named(axis):     # names are data: never blanked (upright_categories turns them instead)
                continue
            kept, hidden = None, set()
            for tick, box in _shown_ticks(axis, renderer):
                if kept is not None and kept.padded(_PAD_PX).overlaps(box):
                    hidden.add(round(float(tick.get_loc()), 12))
                    continue
                kept = box
            if hidden:
                inner = axis.get_major_formatter()
                inner.set_axis(axis)

                def fmt(x, pos, inner=inner, hidden=frozenset(hidden)):
                    return "" if round(float(x), 12) in hidden else inner(x, pos)

                axis.set_major_formatter(FuncFormatter(fmt))


def _data_points(ax, renderer):
    """Display coordinates of the data drawn in ``ax``: line vertices, scatter points, bar tops."""
    import numpy as np
    from matplotlib.collections import PathCollection
    from matplotlib.patches import Rectangle

    pts = []
    for line in ax.get_lines():
        xy = line.get_xydata()
        if line.get_visible() and len(xy):
            pts.append(line.get_transform().transform(xy))
    for coll in ax.collections:
        if isinstance(coll, PathCollection) and coll.get_visible() and len(coll.get_offsets()):
            pts.append(coll.get_offset_transform().transform(coll.get_offsets()))
    for patch in ax.patches:
        if isinstance(patch, Rectangle) and patch.get_visible():
            box = patch.get_window_extent(renderer)
            pts.append(np.array([[box.x0, box.y1], [box.x1, box.y1], [(box.x0 + box.x1) / 2, box.y1]]))
    return np.concatenate(pts) if pts else np.empty((0, 2))


def legends_over_data(fig, renderer=None) -> list:
    """The legends drawn inside a panel that cover some of its data points."""
    renderer = renderer or _renderer(fig)
    out = []
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is None or not leg.get_visible():
            continue
        box = leg.get_window_extent(renderer)
        pts = _data_points(ax, renderer)
        inside = ((pts[:, 0] > box.x0) & (pts[:, 0] < box.x1) & (pts[:, 1] > box.y0) & (pts[:, 1] < box.y1))
        if inside.any():
            out.append((ax, leg))
    return out


def tick_labels_under_figure_legends(fig, renderer=None) -> list:
    """(legend, tick label text) of the shown tick labels that a figure legend (beside the panels)
    overlaps."""
    renderer = renderer or _renderer(fig)
    out = []
    for leg in fig.legends:
        box = leg.get_window_extent(renderer)
        for ax in fig.axes:
            if not ax.get_visible():
                continue
            for axis in (ax.xaxis, ax.yaxis):
                out += [(leg, t.label1.get_text()) for t, tb in _shown_ticks(axis, renderer) if tb.overlaps(box)]
    return out


def table_text_over_cells(fig) -> list[str]:
    """The texts of a table (matplotlib ``Table``) that run over their cell's edges, measured at the
    dpi the figure is saved at (hinted glyphs are relatively wider at a higher dpi)."""
    import matplotlib as mpl
    from matplotlib.table import Table

    tables = fig.findobj(Table)
    if not tables:
        return []
    dpi, saved = fig.dpi, mpl.rcParams["savefig.dpi"]
    if saved != "figure":
        fig.set_dpi(float(saved))
    try:
        renderer = _renderer(fig)
        out = []
        for tab in tables:
            for cell in tab.get_celld().values():
                text, box = cell.get_text(), cell.get_window_extent(renderer)
                if not text.get_visible() or not text.get_text().strip():
                    continue
                tb = text.get_window_extent(renderer)
                if tb.x0 < box.x0 or tb.x1 > box.x1 or tb.y0 < box.y0 or tb.y1 > box.y1:
                    out.append(text.get_text())
        return out
    finally:
        fig.set_dpi(dpi)


def figure_problems(fig) -> list[str]:
    """What a reader could not read in ``fig`` at PRINT_WIDTH_IN: text under MIN_PRINTED_PT, tick
    labels overlapping each other or a legend beside the panels, a legend inside a panel over its
    data, table text over its cell's edge.  [] when it reads well."""
    renderer = _renderer(fig)
    scale = printed_scale(fig, renderer)
    problems = []
    small = sorted({round(t.get_fontsize() * scale, 1) for t in _visible_texts(fig)
                    if t.get_fontsize() * scale < MIN_PRINTED_PT - 1e-6})
    if small:
        examples = [t.get_text()[:30] for t in _visible_texts(fig) if t.get_fontsize() * scale < MIN_PRINTED_PT - 1e-6]
        problems.append(f"text at {small[0]:g} pt when printed {PRINT_WIDTH_IN:g} in wide (minimum "
                        f"{MIN_PRINTED_PT:g} pt), e.g. {examples[:3]}")
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            shown = _shown_ticks(axis, renderer)
            for (a, ba), (b, bb) in zip(shown, shown[1:]):
                if ba.overlaps(bb):
                    problems.append(f"panel {ax.get_title()!r}: {name} tick labels {a.label1.get_text()!r} and "
                                    f"{b.label1.get_text()!r} overlap")
    for ax, _leg in legends_over_data(fig, renderer):
        problems.append(f"panel {ax.get_title()!r}: the legend covers data")
    for _leg, text in tick_labels_under_figure_legends(fig, renderer):
        problems.append(f"the legend beside the panels covers the tick label {text!r}")
    for text in table_text_over_cells(fig):
        problems.append(f"the table text {text[:40]!r} runs over its cell")
    return problems
