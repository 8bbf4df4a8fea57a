"""Kind runtime: wall time per run of each curve, split into the agent's arm selection and model
update (timing cells; the derived table of ``aggregate.timing_table(parts=True)``), as grouped
horizontal bars with the error band of the spec (mean +- sd over runs for ``sd``)."""
from __future__ import annotations

import numpy as np

from ..stats import halfwidth
from .style import PANEL_W, finish_figure, footer_text, no_data, palette, place_legend, require, subplots

PARTS = (("seconds", "whole run"), ("select", "arm selection"), ("update", "model update"))


def _part_columns(part):
    """(mean, sd) columns of a part in the timing table."""
    return ("seconds_per_run", "seconds_sd") if part == "seconds" else (f"{part}_per_run", f"{part}_sd")


def draw(df, spec, plot):
    """Options: logx (default false), xlabel, ncols, legend_loc, parts (which of "seconds", "select",
    "update" to draw; default all three).  One group of bars per curve (in the order of spec.curves),
    one bar per part: the mean over runs, the error bar the spec's band (``sd``: +-1 standard
    deviation over runs, each run's time the median of its repeats), the value written beside it."""
    kind = "runtime"
    require(df, ["panel", "curve", "runs", "seconds_per_run", "seconds_sd"], kind)
    band_kind = spec.get("band", "sd")
    parts = [p for p in PARTS if p[0] in (plot.get("parts") or [q[0] for q in PARTS])]
    parts = [p for p in parts if all(c in df.columns for c in _part_columns(p[0]))]
    panels = [p for p in (spec.get("panels") or []) if p in set(df["panel"])] or list(dict.fromkeys(df["panel"]))
    listed = [str(c) for c in (spec.get("curves") or [])]
    curves = [c for c in listed if c in set(df["curve"])] + [c for c in dict.fromkeys(df["curve"]) if c not in listed]
    colors = palette(len(PARTS))
    fig, axes = subplots(len(panels), plot.get("ncols"), w=1.5 * PANEL_W, h=0.6 + 0.6 * max(len(curves), 1))
    handles = {}
    for ax, panel in zip(axes, panels):
        sub = df[df["panel"] == panel].set_index("curve")
        rows = [c for c in curves if c in sub.index]
        if not rows:
            no_data(ax, panel)
            continue
        height = 0.8 / max(len(parts), 1)
        y0 = np.arange(len(rows))
        for i, (part, label) in enumerate(parts):
            mean_col, sd_col = _part_columns(part)
            mean = sub.loc[rows, mean_col].to_numpy(dtype=float)
            hw = halfwidth(sub.loc[rows, sd_col].to_numpy(dtype=float), sub.loc[rows, "runs"].to_numpy(dtype=float),
                           band_kind)
            ys = y0 - 0.4 + height * (i + 0.5)
            ok = np.isfinite(mean)
            bars = ax.barh(ys[ok], mean[ok], height=height * 0.9, xerr=hw[ok], color=colors[i], label=label,
                           error_kw={"lw": 0.8, "capsize": 2})
            handles.setdefault(label, bars)
            for y, m, h in zip(ys[ok], mean[ok], hw[ok]):
                ax.text(m + h, y, f"  {m:.3g} s", va="center", ha="left", fontsize=7, color="0.25")
        ax.set_yticks(y0)
        ax.set_yticklabels(rows)
        ax.invert_yaxis()
        ax.set_title(panel)
        ax.set_xlabel(plot.get("xlabel", "wall time per run (s)"))
        if plot.get("logx"):
            ax.set_xscale("log")
        else:
            ax.set_xlim(left=0)
            ax.set_xlim(right=ax.get_xlim()[1] * 1.25)       # room for the values
    if axes and handles:
        place_legend(axes[0], list(handles.values()), list(handles), plot.get("legend_loc") or "outside")
    finish_figure(fig, spec, kind, footer_text(spec, kind, runs_text(df), band_kind))
    return fig


def runs_text(df) -> str:
    """The footer's count: runs per curve, and the repeats each run's time is the median of (none said
    where every run was timed once)."""
    runs = sorted(set(int(v) for v in df["runs"])) if len(df) else []
    reps = sorted(set(int(v) for v in df["repeats"])) if "repeats" in df else []
    text = (f"n={runs[0]}" if len(runs) == 1 else f"n={runs[0]}–{runs[-1]}" if runs else "n=0") + " runs"
    if reps and reps != [1]:
        text += f", each the median of {reps[0] if len(reps) == 1 else f'{reps[0]}–{reps[-1]}'} repeats"
    return text
