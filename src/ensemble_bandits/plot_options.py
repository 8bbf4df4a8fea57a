"""The ``plot:`` options each plot kind (:mod:`ensemble_bandits.plotting`) reads (registry entries are checked against them while the job
graph is built, so a misspelt option fails before any job; tests/test_plotting.py keeps this list equal
to what the drawing code reads).  Pure data: no plotting import."""

COMMON = frozenset({"black", "colors", "hline", "hline_label", "hue_by", "linestyles", "style_by"})   # style.py

OPTIONS = {
    "diagram": frozenset({"diagram", "note"}),
    "final_vs_param": frozenset({"base", "base_y", "black", "hlines", "hue", "kind", "legend_loc", "logx", "logy",
                                 "ncols", "reference_slope", "x", "x_order", "xlabel", "y", "ylabel", "ylim"}),
    "function_curve": frozenset({"legend_loc", "logx", "logy", "ncols", "series", "vline", "vline_label", "x",
                                 "xlabel", "xlim", "y", "ylabel", "ylim"}),
    "heatmap": frozenset({"cmap", "col", "col_order", "facet", "fmt", "normalise_by", "row", "row_order", "wrap", "y"}),
    "min_ensemble_size": frozenset({"base", "fit", "group", "interval", "legend_loc", "logy", "ncols", "x", "xlabel",
                                    "y", "ylabel"}),
    "regret_curves": frozenset({"alpha", "band_style", "legend_loc", "legend_split", "legend_split_at", "logx",
                                "logy", "ncols", "on_top", "split_readings", "x", "xlabel", "y", "ylabel", "ylim"}),
    "runtime": frozenset({"legend_loc", "logx", "ncols", "parts", "xlabel"}),
    "table": frozenset({"columns", "digits", "floatfmt", "fontsize", "index", "wrap"}),
}


def allowed_options(kind: str) -> list:
    return sorted(OPTIONS.get(kind, frozenset()) | COMMON)


def unknown_options(kind: str, plot: dict) -> list:
    """The keys of ``plot`` that plot kind ``kind`` does not read."""
    return sorted(set(plot or {}) - set(allowed_options(kind)))
