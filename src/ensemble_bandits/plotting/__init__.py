"""Figures for the replication pipeline: one ``render`` entry point per plot *kind*.

The papermill notebooks in ``notebooks/`` are thin wrappers around :func:`render`::

    from ensemble_bandits import plotting
    plotting.render("regret_curves", table, spec, out_pdf, out_png)

``table`` is a parquet (or csv) path, a DataFrame, or None; ``spec`` is a JSON path, a dict, or
None.  With both None the kind's built-in demo (:func:`demo`) is drawn, so every notebook runs
standalone.

Spec keys: ``id``, ``title``, ``caption``, ``kind``, ``band`` (``se`` | ``sd`` | ``ci95``),
``panels``, ``curves``, ``scale`` and ``plot`` (kind-specific options, all optional; see the
``draw`` function of each kind's module).  Statistics are over seeds; standard deviations use
``ddof=1``.

Layout: one module per kind, named as its notebook (``regret_curves``, ``final_vs_param``,
``heatmap``, ``min_ensemble_size``, ``table``, ``function_curve``, ``diagram``, ``runtime``), each with
``draw(df, spec, plot) -> Figure``; ``style`` holds what they share; ``demo_data`` the demos.
The statistics over seeds (bands, final rows, the fit through the origin) come from
``ensemble_bandits.stats`` and are re-exported here.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from . import (  # noqa: E402
    diagram,
    final_vs_param,
    function_curve,
    heatmap,
    min_ensemble_size,
    regret_curves,
    runtime,
    table,
)
from ..stats import BANDS, band, final_rows, fit_through_origin, summarise  # noqa: E402
from .style import (  # noqa: E402
    DPI,
    absent_figure,
    LINESTYLES,
    MARKERS,
    PANEL_H,
    PANEL_W,
    is_none,
    load_spec,
    load_table,
    rc_params,
    save_figure,
)
from .legibility import figure_problems  # noqa: E402
from .table import write_latex, write_markdown  # noqa: E402

__all__ = [
    "BANDS", "DPI", "KINDS", "LINESTYLES", "MARKERS", "PANEL_H", "PANEL_W", "SIMULATION_KINDS", "band",
    "demo", "final_rows", "fit_through_origin", "load_spec", "load_table", "render", "save_figure",
    "summarise",
]

KINDS = (
    "regret_curves",
    "final_vs_param",
    "heatmap",
    "min_ensemble_size",
    "table",
    "function_curve",
    "diagram",
    "runtime",
)
SIMULATION_KINDS = ("regret_curves", "final_vs_param", "heatmap")

_PLOTTERS = {
    "regret_curves": regret_curves.draw,
    "final_vs_param": final_vs_param.draw,
    "heatmap": heatmap.draw,
    "min_ensemble_size": min_ensemble_size.draw,
    "table": table.draw,
    "function_curve": function_curve.draw,
    "diagram": diagram.draw,
    "runtime": runtime.draw,
}


def _check_kind(kind: str) -> None:
    if kind not in _PLOTTERS:
        raise ValueError(f"unknown plot kind {kind!r}; known kinds: {', '.join(KINDS)}")


def demo(kind: str):
    """(table, spec) of a small deterministic synthetic example of ``kind``."""
    _check_kind(kind)
    from . import demo_data  # demo data stays off the production path until asked for

    return demo_data.build(kind)


def render(kind: str, table=None, spec=None, out_pdf=None, out_png=None) -> dict:
    """Draw ``kind`` from ``table`` and ``spec`` and write out_pdf / out_png (atomically).

    table: parquet/csv path, DataFrame or None; spec: JSON path, dict or None.  With both None
    the demo of the kind is drawn.  Returns {"pdf": path, "png": path[, "md": path, "tex": path]}:
    what was written (the ``table`` kind also writes markdown and LaTeX copies next to out_pdf,
    suffixes ``.md`` and ``.tex``).
    """
    _check_kind(kind)
    df, sp = load_table(table), load_spec(spec)
    if df is None and not sp:
        df, sp = demo(kind)
    if df is None and kind != "diagram":
        raise ValueError(f"{kind}: a table is required (got table=None with a spec {sp.get('id', '')!r})")
    if sp.get("kind") not in (None, kind):
        warnings.warn(f"spec {sp.get('id')!r} says kind {sp.get('kind')!r} but is rendered as {kind!r}")
    if sp.get("band", "se") not in BANDS:
        raise ValueError(f"spec {sp.get('id')!r}: unknown band {sp.get('band')!r}; known bands: {', '.join(BANDS)}")
    plot = dict(sp.get("plot") or {})
    if is_none(out_pdf) and is_none(out_png):
        raise ValueError("render: give out_pdf and/or out_png")
    with plt.rc_context(rc_params()):
        if sp.get("absent_data") and df is not None and "curve" not in df.columns:   # every panel absent
            drawn = absent_figure(sp, kind)
        else:
            drawn = _PLOTTERS[kind](df, sp, plot)
        fig, md_df = drawn if kind == "table" else (drawn, None)  # the table kind also gives markdown
        for problem in figure_problems(fig):   # drawn anyway: the check is for the reader of the log
            warnings.warn(f"{sp.get('id') or 'demo-' + kind}: hard to read at page width: {problem}")
        try:
            written = save_figure(fig, out_pdf, out_png)
        finally:
            plt.close(fig)
    if md_df is not None:
        anchor = out_pdf if not is_none(out_pdf) else out_png
        written["md"] = write_markdown(md_df, sp, Path(anchor).with_suffix(".md"))
        written["tex"] = write_latex(md_df, sp, Path(anchor).with_suffix(".tex"))
    return written
