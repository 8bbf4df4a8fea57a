"""Kind diagram: the sequential-dependence diagrams of Ensemble++ (Figs. 5 and 7) and its content
moderation pipeline (Fig. 14); no table."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib import patches

from .legibility import raise_small_text
from .style import footer_text


def draw(df, spec, plot):
    """Options: diagram ("rrls": Fig. 5, RRLS with theta_s; "seq": Fig. 7, Ensemble++ with bold
    Z_0, z_s and the ensemble factor A_s; "moderation": Fig. 14, the moderation loop), note (bool,
    default True: the caption sentence)."""
    kind = "diagram"
    which = plot.get("diagram", "rrls")
    if which not in ("rrls", "seq", "moderation"):
        raise ValueError(f"diagram: plot.diagram must be 'rrls', 'seq' or 'moderation', got {which!r}")
    if which == "moderation":
        return moderation(spec, plot)
    cols = ["0", "1", "2", "3", "dots", "t", "t+1"]
    X = {c: 1.55 * i for i, c in enumerate(cols)}
    Y_X, Y_E, Y_Z = 2.2, 1.1, 0.0
    sub = {"1": "1", "2": "2", "3": "3", "t": "t", "t+1": "{t+1}", "0": "0"}
    prev = {"1": "0", "2": "1", "3": "2", "dots": "3", "t": "dots", "t+1": "t"}
    if which == "rrls":
        est = lambda s: rf"$\theta_{sub[s]}$"  # noqa: E731
        noise = lambda s: rf"$Z_{sub[s]}$"  # noqa: E731
        est_row, noise_row = "estimate $\\theta_s$ (recursive)", "perturbation $Z_s \\sim N(0,1)$"
        note = ("Sequential dependence: $X_{t+1}$ depends on $Z_1,\\ldots,Z_t$ through the recursive estimate "
                "$\\theta_t$,\nso $Z_1,\\ldots,Z_t$ are no longer i.i.d. when conditioned on the data $X_{t+1}$.")
    else:
        est = lambda s: rf"$\mathbf{{A}}_{sub[s]}$"  # noqa: E731
        noise = lambda s: rf"$\mathbf{{z}}_{sub[s]}$" if s != "0" else r"$\mathbf{Z}_0$"  # noqa: E731
        est_row, noise_row = "ensemble factor $\\mathbf{A}_s$", "perturbation $\\mathbf{z}_s$"
        note = ("The choice of action $X_t$ depends on past random perturbations "
                "$\\mathbf{Z}_0,\\mathbf{z}_1,\\ldots,\\mathbf{z}_{t-1}$,\n"
                "so standard Johnson-Lindenstrauss results are insufficient in this setting.")
    fig = plt.figure(figsize=(10.5, 4.4))
    ax = fig.add_axes((0.02, 0.62 / 4.4, 0.96, 3.35 / 4.4))
    ax.set_xlim(-2.75, X["t+1"] + 0.6)
    ax.set_ylim(-0.95, Y_X + 0.85)
    ax.set_aspect("equal")
    ax.axis("off")
    r = 0.36
    pal = sns.color_palette("colorblind")
    pos = {}

    def node(key, x, y, label, shape="circle", face="white", edge="black", lw=1.2):
        if shape == "circle":
            p = patches.Circle((x, y), r, facecolor=face, edgecolor=edge, lw=lw, zorder=3)
        else:
            p = patches.FancyBboxPatch((x - r * 0.95, y - r * 0.8), 2 * r * 0.95, 1.6 * r,
                                       boxstyle="round,pad=0.02,rounding_size=0.1",
                                       facecolor=face, edgecolor=edge, lw=lw, zorder=3)
        ax.add_patch(p)
        ax.text(x, y, label, ha="center", va="center", fontsize=11, zorder=4)
        pos[key] = (x, y)

    def dots(key, x, y):
        ax.text(x, y, r"$\cdots$", ha="center", va="center", fontsize=16, zorder=4)
        pos[key] = (x, y)

    def arrow(a, b, color="0.15", style="-|>", ls="-", rad=0.0):
        (x1, y1), (x2, y2) = pos[a], pos[b]
        v = np.array([x2 - x1, y2 - y1])
        u = v / np.linalg.norm(v)
        sa = 0.18 if a.endswith("dots") else r * 1.02
        sb = 0.18 if b.endswith("dots") else r * 1.08
        p1 = (x1 + sa * u[0], y1 + sa * u[1])
        p2 = (x2 - sb * u[0], y2 - sb * u[1])
        ax.add_patch(patches.FancyArrowPatch(p1, p2, arrowstyle=style, mutation_scale=11, color=color, lw=1.1,
                                             linestyle=ls, connectionstyle=f"arc3,rad={rad}", zorder=2))

    obs_face = (*pal[0], 0.25)
    for c in cols:
        x = X[c]
        if c == "dots":
            dots("E" + c, x, Y_E)
            dots("X" + c, x, Y_X)
            dots("Z" + c, x, Y_Z)
            continue
        if c != "t+1":
            node("E" + c, x, Y_E, est(c), shape="box", face=(*pal[2], 0.18))
        if c != "0":
            hl = c == "t+1"
            node("X" + c, x, Y_X, rf"$X_{sub[c]}$", face=(*pal[3], 0.35) if hl else obs_face,
                 lw=2.2 if hl else 1.2)
        if c not in ("0", "t+1") or (c == "0" and which == "seq"):
            node("Z" + c, x, Y_Z, noise(c), face=(*pal[1], 0.18))
    for c in cols[1:]:
        p = prev[c]
        if c != "dots":
            arrow("E" + p, "X" + c)  # the estimate chooses the next action
        if c not in ("t+1",):
            arrow("E" + p, "E" + c)  # recursive update
            if c != "dots":
                arrow("X" + c, "E" + c)  # data (X_s, Y_s) enter the update
                arrow("Z" + c, "E" + c)  # fresh perturbation enters the update
    if which == "seq":
        arrow("Z0", "E0")
    # row labels and time labels
    for y, lab in ((Y_X, "action $X_s$"), (Y_E, est_row), (Y_Z, noise_row)):
        ax.text(-0.55, y, lab, ha="right", va="center", fontsize=9, color="0.25")
    for c in cols:
        if c in ("dots",):
            continue
        lab = "prior" if c == "0" else f"time {('$t$' if c == 't' else '$t+1$' if c == 't+1' else '$t=' + c + '$')}"
        ax.text(X[c], Y_X + 0.55, lab, ha="center", va="bottom", fontsize=9, color="0.3")
    # the conditioning statement: Z_1..Z_t (dashed box) are dependent given X_{t+1}
    z_lo = X["1"] - r - 0.15
    z_hi = X["t"] + r + 0.15
    ax.add_patch(patches.FancyBboxPatch((z_lo, Y_Z - r - 0.12), z_hi - z_lo, 2 * r + 0.24,
                                        boxstyle="round,pad=0.0,rounding_size=0.15", fill=False,
                                        edgecolor=pal[3], ls="--", lw=1.3, zorder=1))
    ax.text((z_lo + z_hi) / 2, Y_Z - r - 0.2, "not i.i.d. given $X_{t+1}$" if which == "rrls"
            else "dependent given $X_{t+1}$", ha="center", va="top", fontsize=8.5, color=pal[3])
    if plot.get("note", True):
        fig.text(0.5, 0.5 / 4.4, note, ha="center", va="top", fontsize=8.5,
                 color="0.2")
    title = spec.get("title") or ("RRLS sequential dependence" if which == "rrls" else "Sequential dependence")
    fig.suptitle(title, fontsize=12, y=1 - 0.08 / 4.4, va="top")
    fig.text(0.5, 0.01, footer_text(spec, kind), ha="center", va="bottom", fontsize=7, color="0.35")
    raise_small_text(fig)
    return fig


def moderation(spec, plot):
    """Fig. 14: at time t the moderation agent receives a post x_t, decides to auto-remove (block) or
    to request human review (publish), and obtains feedback only from a review, which updates it."""
    pal = sns.color_palette("colorblind")
    fig = plt.figure(figsize=(10.5, 3.9))
    ax = fig.add_axes((0.02, 0.55 / 3.9, 0.96, 2.95 / 3.9))
    ax.set_xlim(0, 10.5)
    ax.set_ylim(0, 3.0)
    ax.axis("off")
    pos = {}

    def box(key, x, y, w, h, label, color):
        ax.add_patch(patches.FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.03,rounding_size=0.12",
                                            facecolor=(*color, 0.2), edgecolor="0.2", lw=1.2, zorder=3))
        ax.text(x, y, label, ha="center", va="center", fontsize=9.5, zorder=4)
        pos[key] = (x, y, w, h)

    def arrow(a, b, label="", side=(1, 0), rad=0.0, ls="-"):
        (xa, ya, wa, ha), (xb, yb, wb, hb) = pos[a], pos[b]
        p1 = (xa + side[0] * wa / 2, ya + side[1] * ha / 2)
        p2 = (xb - side[0] * wb / 2, yb - side[1] * hb / 2) if side[1] == 0 else (xb, yb + hb / 2)
        ax.add_patch(patches.FancyArrowPatch(p1, p2, arrowstyle="-|>", mutation_scale=12, color="0.15", lw=1.2,
                                             linestyle=ls, connectionstyle=f"arc3,rad={rad}", zorder=2))
        if label:
            ax.text((p1[0] + p2[0]) / 2, (p1[1] + p2[1]) / 2 + 0.12, label, ha="center", va="bottom", fontsize=8.5,
                    color="0.25")

    box("post", 1.0, 2.1, 1.5, 0.8, "post $x_t$\n(stream)", pal[7])
    box("agent", 3.6, 2.1, 2.2, 1.0, "AI moderation\n$f(x_t, \\zeta_t)$, $\\zeta_t \\sim P_\\zeta$", pal[0])
    box("remove", 6.9, 2.55, 1.9, 0.62, "auto-remove\n(block: +0.5)", pal[3])
    box("review", 6.9, 1.45, 1.9, 0.62, "human review\n(publish: +1 / -0.5)", pal[2])
    box("label", 9.4, 1.45, 1.5, 0.62, "label revealed\n(hate / free)", pal[1])
    arrow("post", "agent")
    arrow("agent", "remove", "decide $A_t$")
    arrow("agent", "review")
    arrow("review", "label")
    xl, yl, wl, hl = pos["label"]
    xa, ya, wa, ha = pos["agent"]
    ax.add_patch(patches.FancyArrowPatch((xl, yl - hl / 2), (xa, ya - ha / 2), arrowstyle="-|>", mutation_scale=12,
                                         color=pal[0], lw=1.4, connectionstyle="arc3,rad=-0.35", zorder=2))
    ax.text((xl + xa) / 2, 0.25, "feedback $(x_t, A_t, r_t)$ updates the policy (buffer, gradient step)",
            ha="center", va="center", fontsize=8.5, color=pal[0])
    ax.text(pos["remove"][0] + 1.05, pos["remove"][1], "no feedback", ha="left", va="center", fontsize=8.5, color="0.4")
    if plot.get("note", True):
        fig.text(0.5, 0.42 / 3.9, "Only a reviewed (published) post reveals its label, so exploring means "
                 "publishing uncertain posts.", ha="center", va="top", fontsize=8.5, color="0.2")
    fig.suptitle(spec.get("title") or "Content moderation pipeline", fontsize=12, y=1 - 0.08 / 3.9, va="top")
    fig.text(0.5, 0.01, footer_text(spec, "diagram"), ha="center", va="bottom", fontsize=7, color="0.35")
    raise_small_text(fig)
    return fig
