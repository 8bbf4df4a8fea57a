"""What every plot kind shares: the look (rc, palettes, line styles, legends, title and footer,
saving), and the reading and checking of a kind's inputs (``load_table``, ``load_spec``, panel and
curve columns).  The bands over seeds are computed in ``ensemble_bandits.stats``."""
from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ..atomic import save_figure_atomic
from ..papers import ARXIV, paper_figure
from ..stats import BANDS
from .methods import family_of, method_styles, reading_styles

DPI = 150
PANEL_W, PANEL_H = 4.0, 3.1  # inches per subplot
LINESTYLES = ["-", "--", ":", "-.", (0, (5, 1, 1, 1)), (0, (1, 1)), (0, (8, 2)), (0, (3, 1, 1, 1, 1, 1))]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]


# --------------------------------------------------------------------------------------------
# inputs: tables, specs, panel and curve columns, values
# --------------------------------------------------------------------------------------------
def is_none(x) -> bool:
    return x is None or (isinstance(x, str) and x.strip() in ("", "None", "none", "null"))


def load_table(table):
    if is_none(table):
        return None
    if isinstance(table, pd.DataFrame):
        return table.copy()
    path = Path(table)
    if not path.exists():
        raise FileNotFoundError(f"table {str(path)!r} does not exist")
    if path.suffix == ".csv":
        return pd.read_csv(path)
    from ..tables import read_table

    return read_table(path)


def load_spec(spec) -> dict:
    if is_none(spec):
        return {}
    if isinstance(spec, dict):
        return dict(spec)
    path = Path(spec)
    if not path.exists():
        raise FileNotFoundError(f"spec {str(path)!r} does not exist")
    with open(path) as f:
        out = json.load(f)
    if not isinstance(out, dict):
        raise ValueError(f"spec {str(path)!r} must hold a JSON object, got {type(out).__name__}")
    return out


def require(df: pd.DataFrame, cols, kind: str):
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(
            f"{kind}: table lacks column(s) {missing}; it has {list(df.columns)}"
        )


def ordered(listed, present):
    """Listed items first (in their order), then any extra present items in first-seen order."""
    listed = [str(x) for x in (listed or [])]
    seen = set(listed)
    extra = []
    for p in present:
        if p not in seen:
            seen.add(p)
            extra.append(p)
    return listed + extra


def panel_column(df: pd.DataFrame, spec: dict, default: str = ""):
    """(copy of df with a str ``panel`` column, ``default`` where it had none; panel order)."""
    df = df.copy()
    if "panel" not in df.columns:
        df["panel"] = default
    df["panel"] = df["panel"].astype(str)
    return df, ordered(spec.get("panels"), pd.unique(df["panel"]))


def prepare_sim(df: pd.DataFrame, spec: dict, kind: str, need_t: bool = True):
    """Normalise panel/curve columns; return (df, panels, curves)."""
    cols = ["curve"] + (["t"] if need_t else [])
    require(df, cols, kind)
    listed = spec.get("panels") or []
    df, panels = panel_column(df, spec, str(listed[0]) if len(listed) == 1 else "")
    df["curve"] = df["curve"].astype(str)
    curves = ordered(spec.get("curves"), pd.unique(df["curve"]))
    extra = [c for c in pd.unique(df["curve"]) if c not in set(map(str, spec.get("curves") or []))]
    if spec.get("curves") and extra:
        warnings.warn(f"{spec.get('id', kind)}: curves {extra} are not listed in spec.curves; drawn last")
    return df, panels, curves


def seed_counts(df: pd.DataFrame) -> list[int]:
    """Seeds per (panel, curve)."""
    if "seed" in df.columns:
        n = df.groupby(["panel", "curve"], sort=False)["seed"].nunique()
    elif "t" in df.columns:
        n = df.groupby(["panel", "curve", "t"], sort=False).size().groupby(level=[0, 1]).max()
    else:
        n = df.groupby(["panel", "curve"], sort=False).size()
    return sorted(set(int(v) for v in n.to_numpy()))


def seeds_text(ns) -> str:
    if not ns:
        return "n=0 seeds"
    if len(ns) == 1:
        return f"n={ns[0]} seeds"
    return f"n={ns[0]}–{ns[-1]} seeds"


def fmt_val(v) -> str:
    if isinstance(v, (float, np.floating)) and np.isfinite(v) and float(v).is_integer():
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return f"{v:g}"
    return str(v)


LOG_SUBS = (1.0, 2.0, 3.0, 5.0)                      # major ticks of a base-10 log axis, per decade
LOG_SUBS_NARROW = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 7.0)  # ... of one that spans less than a decade


def log_ticks(axis, base=10) -> None:
    """Plain-number labels on a log axis at 1, 2, 3 and 5 times the powers of ten (also 1.5, 4 and 7
    times where the view spans less than a decade, so that no stretch of data goes unlabelled; powers
    of ``base`` otherwise) and no minor labels: matplotlib labels the minor ticks of an axis spanning
    less than a decade, in mathtext, where "3x10^4" and "4x10^4" overlap.  Labels that would overlap
    are blanked later (legibility.thin_tick_labels)."""
    import math

    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    class PlainLogLocator(LogLocator):
        def tick_values(self, vmin, vmax):
            if base == 10 and vmin > 0 and vmax > 0:
                narrow = abs(math.log10(vmax / vmin)) < 1
                self.set_params(subs=LOG_SUBS_NARROW if narrow else LOG_SUBS)
            return super().tick_values(vmin, vmax)

    axis.set_major_locator(PlainLogLocator(base=base, subs=LOG_SUBS if base == 10 else (1.0,)))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: fmt_val(float(v))))
    axis.set_minor_formatter(NullFormatter())


def value_label(col: str, v) -> str:
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        return f"{col} = {fmt_val(v)}"
    return str(v)


def sorted_values(values):
    vals = [v for v in values if not isnull(v)]
    try:
        return sorted(set(vals), key=lambda v: float(v))
    except (TypeError, ValueError):
        out = []
        for v in vals:
            if v not in out:
                out.append(v)
        return out


def isnull(v) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


_GREEK = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "kappa", "lambda", "mu", "nu",
          "xi", "pi", "rho", "sigma", "tau", "phi", "chi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda",
          "Sigma", "Phi", "Psi", "Omega")
_SUB = r"(?:_\{[^{}$]*\}|_[A-Za-z0-9]+)"
_SUP = r"(?:\^\{[^{}$]*\}|\^-?[A-Za-z0-9]+)"
_MATH_TOKEN = re.compile(rf"\b(?:({'|'.join(_GREEK)})(?![A-Za-z])({_SUB}?{_SUP}?)|([A-Za-z0-9]+)({_SUB}{_SUP}|{_SUP}|_[A-Z0-9]\b))")


def _script(part: str) -> str:
    """``_R^2`` -> ``_{R}^{2}`` (mathtext wants braces round a script of more than one character)."""
    return re.sub(r"([_^])(?!\{)(-?[A-Za-z0-9]+)", r"\1{\2}", part)


def pretty(text: str) -> str:
    """A label in the registry's ASCII (``sigma_R = 0.5``, ``beta_T``, ``lambda sigma_R^2 I``,
    ``10^4``, ``<=``) as matplotlib mathtext (σ_R, β_T, λ σ_R², 10⁴, ≤).  Text already holding ``$``
    is left alone."""
    if not text or "$" in text:
        return text

    def sub(m):
        if m.group(1):
            return f"$\\{m.group(1)}{_script(m.group(2))}$"
        return f"${m.group(3)}{_script(m.group(4))}$"

    out = _MATH_TOKEN.sub(sub, text)
    return out.replace("<=", "≤").replace(">=", "≥").replace("+-", "±")


# --------------------------------------------------------------------------------------------
# palettes and line styles
# --------------------------------------------------------------------------------------------
def palette(n: int):
    if n <= 10:
        return sns.color_palette("colorblind", max(n, 1))
    return sns.color_palette("husl", n)


def comparison_styles(curves, spec: dict) -> dict:
    """The method look of ``curves`` when they compare two or more method families, else {}."""
    methods, readings = spec.get("methods") or {}, spec.get("readings") or {}
    families = {family_of(methods.get(c)) for c in curves if c not in readings} - {None}
    return method_styles(curves, methods, readings) if len(families) >= 2 else {}


def sweep_palette(n: int):
    """Ordered colours for the values of a swept parameter (viridis without its pale yellow end, so
    no value looks like a method's colour)."""
    cmap = sns.color_palette("viridis", as_cmap=True)
    return [tuple(cmap(x)[:3]) for x in (np.linspace(0.0, 0.82, n) if n > 1 else [0.35])]


def _curve_attr(df: pd.DataFrame, col: str) -> dict:
    if col not in df.columns:
        raise ValueError(f"plot option refers to column {col!r}, absent from the table; it has {list(df.columns)}")
    return df.groupby("curve", sort=False)[col].first().to_dict()


def curve_styles(df: pd.DataFrame, curves, plot: dict, spec: dict | None = None) -> dict:
    """curve -> dict(color=..., linestyle=...), consistent across panels.  A figure comparing
    methods (curves of two or more method families, ``spec["methods"]``) draws each in its family's
    look (:mod:`.methods`); a sweep of one method colours its curves in order, or by ``hue_by``.
    ``colors`` and ``linestyles`` ({curve label: matplotlib color / line style}; the key "*" sets the
    line style of every curve not named) override the rest, e.g. a paper's "baseline gray solid,
    variants dashed"."""
    hue_by, style_by = plot.get("hue_by"), plot.get("style_by")
    black = set(map(str, plot.get("black") or []))
    readings = (spec or {}).get("readings") or {}
    styles = {}
    by_method = {} if hue_by else comparison_styles(curves, spec or {})
    if by_method:
        rest = [c for c in curves if c not in by_method and c not in black]
        pal = palette(min(len(rest), 10)) if rest else []
        styles = {c: dict(by_method[c]) for c in by_method}
        for i, c in enumerate(rest):
            styles[c] = {"color": pal[i % len(pal)]}
    elif hue_by:  # a sweep: an ordered palette over the values; a curve without a value keeps its method's look
        attr = _curve_attr(df, hue_by)
        values = sorted_values(attr.get(c) for c in curves)
        methods = (spec or {}).get("methods") or {}
        nulls = [c for c in curves if isnull(attr.get(c)) and c not in black and not family_of(methods.get(c))]
        pal = sweep_palette(len(values))
        other = palette(len(nulls))
        for c in curves:
            v = attr.get(c)
            if not isnull(v):
                style = {"color": pal[values.index(v)]}
            elif c in nulls:
                style = {"color": other[nulls.index(c)]}
            elif c in black:
                style = {"color": "black"}
            else:
                style = dict(method_styles([c], methods, {})[c])
            styles[c] = style
    else:
        coloured = [c for c in curves if c not in black and c not in readings]
        pal = palette(min(len(coloured), 10))
        for i, c in enumerate(coloured):
            styles[c] = {"color": pal[i % len(pal)]}
            if len(coloured) > 10:             # past the palette's 10 colours: line styles too
                styles[c]["linestyle"] = LINESTYLES[(i // 10) % len(LINESTYLES)]
    if not by_method:  # a reading's curve takes its base curve's colour, in its reading's line style
        styles.update(reading_styles(curves, readings, {**styles, **dict.fromkeys(black, {"color": "black"})}))
    if style_by:
        attr = _curve_attr(df, style_by)
        values = sorted_values(attr.get(c) for c in curves)
        for c in curves:
            v = attr.get(c)
            ls = "-" if isnull(v) else LINESTYLES[values.index(v) % len(LINESTYLES)]
            styles.setdefault(c, {})["linestyle"] = ls
    colors, linestyles = dict(plot.get("colors") or {}), dict(plot.get("linestyles") or {})
    for c in curves:
        styles.setdefault(c, {})
        if c in black:
            styles[c]["color"] = "black"
        if c in colors:
            styles[c]["color"] = colors[c]
        if c in linestyles or ("*" in linestyles and c not in readings):   # "*" leaves readings their style
            styles[c]["linestyle"] = linestyles.get(c, linestyles.get("*"))
        styles[c].setdefault("linestyle", "-")
    return styles


# --------------------------------------------------------------------------------------------
# figure helpers
# --------------------------------------------------------------------------------------------
def rc_params():
    rc = {}
    rc.update(sns.axes_style("whitegrid"))
    rc.update(sns.plotting_context("paper", font_scale=1.15))
    rc.update({
        "axes.prop_cycle": matplotlib.cycler(color=sns.color_palette("colorblind")),
        "pdf.fonttype": 42,
        "ps.fonttype": 42,
        "legend.frameon": True,
        "legend.framealpha": 0.85,
        "legend.fontsize": "small",
        "figure.dpi": 100,
        "savefig.dpi": DPI,
    })
    return rc


def _grid(n: int, ncols=None):
    ncols = int(ncols) if ncols else n
    ncols = max(1, min(ncols, n))
    nrows = max(1, math.ceil(n / ncols))
    return nrows, ncols


def subplots(n: int, ncols=None, w=PANEL_W, h=PANEL_H, **kw):
    nrows, ncols = _grid(n, ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(w * ncols, h * nrows + 0.6), squeeze=False, **kw)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def footer_text(spec: dict, kind: str, n_text: str | None = None, band_kind: str | None = None,
                bars: bool | str = False) -> str:
    """``bars``: "all" (every panel draws its band as bars), True (some panels do), False (none)."""
    parts = [str(spec.get("id") or f"demo-{kind}"), f"scale={spec.get('scale') or 'demo'}"]
    if n_text:
        parts.append(n_text)
    if band_kind:
        what = BANDS.get(band_kind, band_kind)
        parts.append(f"bars: {what}" if bars == "all" else f"band: {what} (bars where bands overlap)" if bars
                     else f"band: {what}")
    paper = str(spec.get("id") or "").split("-")[0]
    if paper in ARXIV:
        item = paper_figure({"title": spec.get("title", ""), "paper": paper})
        parts.append(f"replicates {item}" if not item.startswith("designed") else
                     f"an experiment designed here to test arXiv {ARXIV[paper]}")
    return " · ".join(parts)


def seeds_footer(spec: dict, kind: str, df: pd.DataFrame, band_kind: str | None, bars: bool | str = False) -> str:
    """Footer of a simulation figure: the seeds per (panel, curve) of ``df`` and the band (``bars``:
    drawn as bars at a few rounds, see :func:`footer_text`)."""
    return footer_text(spec, kind, seeds_text(seed_counts(df)), band_kind, bars)


def finish_figure(fig, spec: dict, kind: str, footer: str):
    """Title on top, footer at the bottom, tight layout in between; then made legible at a page's
    width (:mod:`.legibility`): mathtext labels, no text under the printed minimum, a legend that
    would cover data moved below the panels, overlapping tick labels thinned."""
    from .legibility import legends_over_data, prettify, thin_tick_labels, upright_categories

    w, h = fig.get_size_inches()
    title = spec.get("title") or kind.replace("_", " ")
    fig.suptitle(title, fontsize=12, y=1 - 0.06 / h, va="top")
    if spec.get("pending_curves"):        # registered curves not simulated yet (registry ``pending:``)
        footer += f" · not simulated yet: {', '.join(spec['pending_curves'])}"
    fig._eb_footer = fig.text(0.5, 0.04 / h, footer, ha="center", va="bottom", fontsize=7, color="0.35")
    prettify(fig, pretty)
    _layout(fig, h)
    _raise_small_text(fig, h)
    if legends_over_data(fig):      # every panel legend moves into one legend below the panels
        handles, labels, ncol = getattr(fig, "_eb_outside_legend", None) or ([], [], 1)
        for ax in fig.axes:
            leg = ax.get_legend()
            if leg is None:
                continue
            for hd, text in zip(leg.legend_handles, leg.get_texts()):
                if text.get_text() not in labels:
                    handles, labels = handles + [hd], labels + [text.get_text()]
            leg.remove()
        fig._eb_outside_legend = (handles, labels, ncol)
        _layout(fig, h)
        _raise_small_text(fig, h)
    w, h = _fit_width(fig, w, h)    # once the panels have their legend
    grow = upright_categories(fig)  # named categories keep every name: vertical rather than thinned
    if grow:
        h += grow
        fig.set_size_inches(w, h)
        _layout(fig, h)
    thin_tick_labels(fig)


def _fit_width(fig, w: float, h: float) -> tuple[float, float]:
    """Widen the figure for a title wider than its panels, then break the title and footer into
    lines the panels' width, the figure taller by the lines they gained (:mod:`.fit_width`)."""
    from .fit_width import widening, wrap_to_panels

    grow = widening(fig)
    if grow:
        w += grow
        fig.set_size_inches(w, h)
        _layout(fig, h)
    title_in, footer_in = wrap_to_panels(fig, fig._eb_footer)
    if title_in or footer_in:
        h += title_in + footer_in
        fig.set_size_inches(w, h)
        fig._suptitle.set_y(1 - 0.06 / h)
        fig._eb_footer.set_y(0.04 / h)
        fig._eb_footer_in = footer_in
        _layout(fig, h)
    return w, h


def _raise_small_text(fig, h: float) -> None:
    from .legibility import raise_small_text

    for _ in range(4):       # raising text can widen the figure (a long legend), which lowers the floor
        if not raise_small_text(fig):
            return
        _layout(fig, h)


LEGEND_GAP_IN = 0.06     # between the panels' labels and a legend below them, and between it and the footer


def _layout(fig, h: float) -> None:
    """Tight layout below the title and above the footer; the figure legend (if any) below the panels,
    centred on them, in as many columns as their width holds, and the footer below it.  Below rather
    than beside: beside, a legend of long labels took more of the image's width than the panels."""
    for leg in list(fig.legends):
        leg.remove()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # tight_layout makes room for the suptitle itself; the footer's lines past its first as well
        fig.tight_layout(rect=(0, (0.26 + getattr(fig, "_eb_footer_in", 0.0)) / h, 1, 1))
    outside = getattr(fig, "_eb_outside_legend", None)
    if outside:
        handles, labels, ncol = outside
        renderer = fig.canvas.get_renderer()   # below every panel's tick labels and axis label
        boxes = [ax.get_tightbbox(renderer) for ax in fig.axes if ax.get_visible()] or [fig.bbox]
        to_fig = fig.transFigure.inverted()
        x0, y0 = to_fig.transform((min(b.x0 for b in boxes), min(b.y0 for b in boxes)))
        x1, _ = to_fig.transform((max(b.x1 for b in boxes), 0))
        gap = LEGEND_GAP_IN / h
        floor = getattr(fig, "_eb_text_floor", 0.0)
        width_px = (x1 - x0) * fig.bbox.width
        leg = None
        for cols in range(min(len(labels), max(int(ncol), 6)), 0, -1):   # the most columns that fit the panels' width
            if leg is not None:
                leg.remove()
            leg = fig.legend(handles, [pretty(lab) for lab in labels], loc="upper center",
                             bbox_to_anchor=((x0 + x1) / 2, y0 - gap), ncol=cols)
            for text in leg.get_texts():
                text.set_fontsize(max(text.get_fontsize(), floor))
            if cols == 1 or leg.get_window_extent(renderer).width <= width_px:
                break
        footer = getattr(fig, "_eb_footer", None)
        if footer is not None:     # below the legend (the saved figure's tight box takes in both)
            bottom = to_fig.transform((0, leg.get_window_extent(renderer).y0))[1]
            footer.set_y(bottom - gap)
            footer.set_va("top")


def save_figure(fig, out_pdf=None, out_png=None) -> dict:
    """Write fig atomically to out_pdf (vector) and out_png (150 dpi); either may be None."""
    written = {}
    for key, path, fmt in (("pdf", out_pdf, "pdf"), ("png", out_png, "png")):
        if is_none(path):
            continue
        meta = {"CreationDate": None} if fmt == "pdf" else {"Software": None}
        written[key] = save_figure_atomic(fig, path, format=fmt, dpi=DPI, bbox_inches="tight", pad_inches=0.08,
                                          metadata=meta)
    return written


def absent_text(spec: dict) -> str:
    """What a panel left out for absent optional datasets shows (registry ``optional_data:``)."""
    names = ", ".join(spec.get("absent_data") or [])
    return f"data absent:\n{names} not in data_dir\n(optional; fetch with\n`cli data fetch {names}`)"


def absent_figure(spec: dict, kind: str):
    """The figure of an entry whose every panel reads absent optional datasets: one empty panel
    each, saying "data absent"."""
    panels = spec.get("absent_panels") or spec.get("panels") or [""]
    fig, axes = subplots(len(panels))
    for ax, panel in zip(axes, panels):
        no_data(ax, panel, absent_text(spec))
    finish_figure(fig, spec, kind, footer_text(spec, kind, "data absent"))
    return fig


def no_data(ax, label="", text="no data"):
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="0.5")
    ax.set_title(label)
    ax.set_xticks([])
    ax.set_yticks([])


def default_ylabel(y: str, final: bool = False) -> str:
    if y == "regret":
        return "final cumulative regret" if final else "cumulative regret"
    if y == "seconds":
        return "wall time (s)"
    return y


def ref_hlines(ax, plot):
    """plot.hline: a number or a list of numbers drawn as dashed grey reference lines
    (label from plot.hline_label, default "y = <value>")."""
    vals = plot.get("hline")
    if vals is None:
        return
    vals = vals if isinstance(vals, (list, tuple)) else [vals]
    labels = plot.get("hline_label")
    labels = labels if isinstance(labels, (list, tuple)) else [labels] * len(vals)
    for v, lab in zip(vals, labels):
        ax.axhline(float(v), color="0.35", ls="--", lw=1.0, label=lab or f"y = {float(v):g}")


def paper_points(ax, spec: dict, panel: str = "") -> None:
    """The numbers the paper's text states (registry ``paper_values`` with x and y), drawn as black
    diamonds labelled "paper: <label>", on the panel they name (every panel when they name none)."""
    for v in spec.get("paper_values") or []:
        if "y" not in v or v.get("panel", panel) != panel:
            continue
        x = v.get("x", spec.get("horizon"))
        ax.plot([x], [v["y"]], marker="D", ms=6, color="black", ls="none", zorder=5, label=f"paper: {v['label']}")


def paper_columns(df: pd.DataFrame, spec: dict, by: str = "curve") -> pd.DataFrame:
    """``df`` with a column per registry ``paper_values`` item that has ``column`` and ``values``
    ({row's ``by`` value: the paper's number}; blank where the paper states none, and on the rows of
    other panels than the item's ``panel``)."""
    for v in spec.get("paper_values") or []:
        if v.get("column") and v.get("values") and by in df.columns:
            values = df[by].map(v["values"])
            if v.get("panel") and "panel" in df.columns:
                values = values.where(df["panel"] == v["panel"])
            df = df.assign(**{v["column"]: values})
    return df


def place_legend(ax, handles, labels, loc="best", ncol=1):
    """Legend inside ``ax`` at ``loc``, or with loc="outside" one figure legend below the panels
    (saved figures use bbox_inches="tight", so it is kept)."""
    if not handles:
        return None
    if loc == "outside":
        fig = ax.figure
        fig._eb_outside_legend = (handles, labels, ncol)  # placed by finish_figure, after tight_layout (_layout)
        return None
    return ax.legend(handles, labels, loc=loc, ncol=ncol)
