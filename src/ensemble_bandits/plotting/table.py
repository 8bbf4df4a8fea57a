"""Kind table: any DataFrame drawn as a table figure, plus the same table as markdown."""
from __future__ import annotations

import math
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..atomic import write_text_atomic
from .style import (
    finish_figure,
    paper_columns,
    footer_text,
    isnull,
)


DIGITS = 3                # significant digits of a float cell unless the entry says otherwise
CELL_PAD = 0.04           # a cell's text inset, as a fraction of its width (matplotlib's Cell.PAD)
MAX_WIDTH_IN = 9.5        # a table wider than this at its font is wrapped narrower


def _fmt_cell(v, floatfmt=None, digits=DIGITS) -> str:
    if isnull(v):
        return ""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if floatfmt:
            return format(v, floatfmt)
        if v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        a = abs(v)
        if 1e-3 <= a < 1e7:
            out = f"{v:.{max(0, digits - 1 - math.floor(math.log10(a)))}f}"
            return out.rstrip("0").rstrip(".") if "." in out else out
        return f"{v:.{digits}g}"
    return str(v)


def _markdown(df: pd.DataFrame) -> str:
    """Pipe table of a DataFrame of strings (pipes escaped, newlines flattened)."""
    esc = lambda s: str(s).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    df = pd.DataFrame([[esc(v) for v in row] for row in df.itertuples(index=False)],
                      columns=[esc(c) for c in df.columns])
    try:
        import tabulate  # noqa: F401

        return df.to_markdown(index=False, disable_numparse=True)
    except ImportError:
        lines = ["| " + " | ".join(df.columns) + " |", "|" + "|".join("---" for _ in df.columns) + "|"]
        for row in df.itertuples(index=False):
            lines.append("| " + " | ".join(row) + " |")
        return "\n".join(lines)


def shown_columns(df: pd.DataFrame, plot: dict, spec: dict | None = None) -> pd.DataFrame:
    """The columns a reader sees: ``columns`` ({column: header}, in order) selects and names them
    (the others stay in the figure's data table), then the paper's values (registry
    ``paper_values`` with ``column``) by curve."""
    cols = plot.get("columns")
    paper = paper_columns(df, spec or {})
    added = [c for c in paper.columns if c not in df.columns]
    if not cols:
        return paper
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"table: plot.columns names {missing}, not columns of the table; it has {list(df.columns)}")
    return paper[list(cols) + added].rename(columns={c: str(h) for c, h in cols.items()})


def _cells(df, wrap, ff, digits):
    body = [[_fmt_cell(v, ff, digits) for v in row] for row in df.itertuples(index=False)]
    header = [str(c) for c in df.columns]
    wrapped_h = ["\n".join(textwrap.wrap(h, wrap) or [""]) for h in header]
    wrapped = [["\n".join(textwrap.wrap(x, wrap) or [""]) for x in row] for row in body]
    return body, header, wrapped_h, wrapped


def _text_width_in(text: str, fs: float, bold: bool) -> float:
    """The width in inches of one line of ``text`` at ``fs`` points in the current font (as mathtext
    where matplotlib draws it so), with 3 % for hinted glyphs, which are wider at a high dpi."""
    from matplotlib.cbook import is_math_text
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    prop = FontProperties(size=fs, weight="bold" if bold else "normal")
    w = TextToPath().get_text_width_height_descent(text, prop, ismath=is_math_text(text))[0]
    return 1.03 * w / 72.0


def _geometry(allrows, ncol, fs):
    """Column widths (inches) that hold each column's widest line (the header row bold), and row
    heights."""
    widths = [max(_text_width_in("000", fs, False),
                  max((_text_width_in(x, fs, i == 0) for i, r in enumerate(allrows) for x in r[j].split("\n")),
                      default=0.0)) for j in range(ncol)]
    lines = [max((r[j].count("\n") + 1 for j in range(ncol)), default=1) for r in allrows]
    line_h = 0.021 * fs  # inches
    return [(w + 0.06) / (1 - 2 * CELL_PAD) for w in widths], [n * line_h + 0.08 for n in lines]


def draw(df, spec, plot):
    """Any DataFrame.  Options: columns ({column: header}: the columns shown, in order, and their
    names), digits (significant digits, default 3), floatfmt (e.g. ".3f", instead of digits), wrap
    (characters per line, default 28; narrower when the table would be wider than MAX_WIDTH_IN, or too
    wide to print at 6 pt on a page at its font), fontsize (default 8; larger when even the narrowest
    wrap is too wide), index (bool: include the index as a first column)."""
    from .legibility import MIN_PRINTED_PT, PRINT_WIDTH_IN

    kind = "table"
    if plot.get("index"):
        df = df.reset_index()
    df = shown_columns(df, plot, spec)
    ff, digits = plot.get("floatfmt"), int(plot.get("digits", DIGITS))
    fs = float(plot.get("fontsize", 8))
    # the widest wrap at which the table prints at the minimum size without a larger font
    limit = min(MAX_WIDTH_IN, PRINT_WIDTH_IN * fs / (MIN_PRINTED_PT + 0.1))
    for wrap in range(int(plot.get("wrap", 28)), 7, -2):
        body, header, wrapped_h, wrapped = _cells(df, wrap, ff, digits)
        allrows = [wrapped_h] + wrapped
        ncol = max(len(header), 1)
        col_w, row_h = _geometry(allrows, ncol, fs)
        if sum(col_w) + 0.2 <= limit:
            break
    for _ in range(8):   # the font that prints at the minimum size once the table is shrunk to the page
        width = max(4.0, sum(col_w) + 0.2)
        need = (MIN_PRINTED_PT + 0.1) * max(width, PRINT_WIDTH_IN) / PRINT_WIDTH_IN
        if fs >= need:
            break
        fs = need
        col_w, row_h = _geometry(allrows, ncol, fs)
    width = max(4.0, sum(col_w) + 0.2)
    height = sum(row_h) + 0.9
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0.1 / width, 0.3 / height, 1 - 0.2 / width, 1 - 0.75 / height))
    ax.axis("off")
    if not body:
        ax.text(0.5, 0.5, "(empty table)", ha="center", va="center", color="0.5")
    else:
        tab = ax.table(cellText=wrapped, colLabels=wrapped_h, cellLoc="left", colLoc="left", bbox=(0, 0, 1, 1))
        tab.auto_set_font_size(False)
        tab.set_fontsize(fs)
        tw, th = sum(col_w), sum(row_h)
        for (r, c), cell in tab.get_celld().items():
            cell.set_width(col_w[c] / tw)
            cell.set_height(row_h[r] / th)
            cell.set_linewidth(0.4)
            cell.set_edgecolor("0.6")
            cell.PAD = CELL_PAD
            if r == 0:
                cell.set_facecolor("0.9")
                cell.get_text().set_fontweight("bold")
            elif r % 2 == 0:
                cell.set_facecolor("0.97")
    finish_figure(fig, spec, kind, footer_text(spec, kind))
    md_df = pd.DataFrame(body, columns=header)
    return fig, md_df


def write_markdown(md_df, spec, path):
    title = spec.get("title")
    parts = []
    if title:
        parts.append(f"**{title}**\n")
    parts.append(_markdown(md_df))
    if spec.get("caption"):
        parts.append(f"\n_{spec['caption']}_")
    return write_text_atomic("\n".join(parts) + "\n", path)


def write_latex(md_df, spec, path):
    """The table as a LaTeX ``table`` float (booktabs rules; \\usepackage{booktabs}), captioned with
    the entry's title and labelled ``tab:<id>``."""
    tex = md_df.to_latex(index=False, escape=True, caption=spec.get("title") or None,
                         label=f"tab:{spec['id']}" if spec.get("id") else None)
    return write_text_atomic(tex, path)
