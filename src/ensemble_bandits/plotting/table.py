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
    footer_text,
    isnull,
)


def _fmt_cell(v, floatfmt=None) -> str:
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
            out = f"{v:.{max(0, 3 - math.floor(math.log10(a)))}f}"
            return out.rstrip("0").rstrip(".") if "." in out else out
        return f"{v:.4g}"
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


def draw(df, spec, plot):
    """Any DataFrame.  Options: wrap (characters per line, default 28), floatfmt (e.g. ".3f"),
    fontsize (default 8), index (bool: include the index as a first column)."""
    kind = "table"
    if plot.get("index"):
        df = df.reset_index()
    wrap = int(plot.get("wrap", 28))
    ff = plot.get("floatfmt")
    body = [[_fmt_cell(v, ff) for v in row] for row in df.itertuples(index=False)]
    header = [str(c) for c in df.columns]
    wrapped_h = ["\n".join(textwrap.wrap(h, wrap) or [""]) for h in header]
    wrapped = [["\n".join(textwrap.wrap(s, wrap) or [""]) for s in row] for row in body]
    allrows = [wrapped_h] + wrapped
    ncol = max(len(header), 1)
    chars = [max((max((len(x) for x in r[j].split("\n")), default=0) for r in allrows), default=1)
             for j in range(ncol)]
    chars = [max(c, 3) for c in chars]
    lines = [max((r[j].count("\n") + 1 for j in range(ncol)), default=1) for r in allrows]
    fs = float(plot.get("fontsize", 8))
    char_w, line_h = 0.0085 * fs, 0.021 * fs  # inches
    col_w = [c * char_w + 0.16 for c in chars]
    row_h = [n * line_h + 0.08 for n in lines]
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
            cell.PAD = 0.04
            if r == 0:
                cell.set_facecolor("0.9")
                cell.get_text().set_fontweight("bold")
            elif r % 2 == 0:
                cell.set_facecolor("0.97")
    finish_figure(fig, spec, kind, footer_text(spec, kind))
    md_df = pd.DataFrame([[_fmt_cell(v, ff) for v in row] for row in df.itertuples(index=False)], columns=header)
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
