"""Figures a reader can read and compare: one look per method across the whole project, labels in
mathtext, every plot kind legible at a page's width (a check that can fail), fig8-style heatmaps
on one diverging scale, tables with named columns."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.colors as mcolors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from ensemble_bandits import plotting, registry  # noqa: E402
from ensemble_bandits.aggregate import figure_spec  # noqa: E402
from ensemble_bandits.plotting import heatmap, legibility, methods, style  # noqa: E402
from ensemble_bandits.plotting import table as table_kind  # noqa: E402


def _method_figures(entries, config):
    """(id, spec, curve styles) of every registry figure drawn by method (no hue sweep), at paper scale."""
    out = []
    for fid, entry in entries.items():
        if entry["kind"] not in ("regret_curves", "final_vs_param"):
            continue
        plot = entry.get("plot", {})
        if plot.get("hue_by") or plot.get("hue"):
            continue
        fig = registry.resolve(entry, "paper", config["scales"])
        spec = figure_spec(fig)
        if not style.comparison_styles(spec["curves"], spec):
            continue                     # a sweep of one method: colour encodes the swept value
        df = pd.DataFrame({"curve": spec["curves"]})
        out.append((fid, spec, style.curve_styles(df, spec["curves"], plot, spec)))
    return out


def _lab(color):
    """CIELAB (D65) of an sRGB colour."""
    c = np.array(mcolors.to_rgb(color))
    c = np.where(c > 0.04045, ((c + 0.055) / 1.055) ** 2.4, c / 12.92)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ c
    f = lambda t: np.where(t > 216 / 24389, np.cbrt(t), (24389 / 27 * t + 16) / 116)  # noqa: E731
    fx, fy, fz = f(xyz / np.array([0.95047, 1.0, 1.08883]))
    return np.array([116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)])


def test_the_methods_of_one_figure_have_colours_a_reader_tells_apart(entries, config):
    """The live registry as data.

    Every two method families that share a figure differ by a CIELAB distance of at least 25 (about
    ten just-noticeable differences; the palette's pink and purple, 21 apart, read as one method
    in epp-fig15 at print size)."""
    checked = 0
    for fid, spec, _ in _method_figures(entries, config):
        fams = sorted({methods.family_of(a) for a in spec["methods"].values()} - {None})
        for i, a in enumerate(fams):
            for b in fams[i + 1:]:
                checked += 1
                d = np.linalg.norm(_lab(methods.FAMILIES[a][0]) - _lab(methods.FAMILIES[b][0]))
                assert d >= 25, f"{fid}: {a} and {b} are {d:.1f} apart in CIELAB"
    assert checked > 20
    assert np.linalg.norm(_lab("#ffffff") - _lab("#000000")) == pytest.approx(100, abs=0.01)


def colour_clashes(spec: dict, styles: dict, min_delta: float = 25.0) -> list:
    """Pairs of curves of two different method families whose drawn colours (a family's shade for an
    agent's second or third curve included) are closer than ``min_delta`` in CIELAB."""
    fams = {c: methods.family_of(a) for c, a in spec["methods"].items() if c in styles}
    out = []
    curves = sorted(c for c in fams if fams[c])
    for i, a in enumerate(curves):
        for b in curves[i + 1:]:
            if fams[a] != fams[b]:
                d = float(np.linalg.norm(_lab(styles[a]["color"]) - _lab(styles[b]["color"])))
                if d < min_delta:
                    out.append((a, b, round(d, 1)))
    return out


def test_the_curves_of_two_methods_are_drawn_in_colours_a_reader_tells_apart(entries, config):
    """The live registry as data.

    Not only the families' base colours: every two curves of different methods in a figure, as drawn
    (an agent's further curves take shades of its colour), are 25 apart in CIELAB. The old phe-fig1
    failed here: LinPHE (a = 1), a light shade of the perturbed-history vermillion, was 21.9 from
    LinTS's orange."""
    clashes = {fid: c for fid, spec, styles in _method_figures(entries, config) if (c := colour_clashes(spec, styles))}
    assert not clashes, clashes
    old = {"color": methods.shade("#D55E00", 1, 3)}, {"color": methods.agent_look("lints")[0]}
    assert colour_clashes({"methods": {"LinPHE (a = 1)": "linphe", "LinTS": "lints"}},
                          {"LinPHE (a = 1)": old[0], "LinTS": old[1]})


def test_a_method_keeps_its_colour_in_every_figure(entries, config):
    """The live registry as data: a method keeps its colour in every live figure drawn by method."""
    figs = _method_figures(entries, config)
    seen, compared = {}, 0
    for fid, spec, styles in figs:
        for curve, st in styles.items():
            if curve not in spec["methods"] or curve in (spec["plot"].get("colors") or {}):
                continue
            color = mcolors.to_hex(st["color"])
            if curve in seen:
                compared += 1
                assert seen[curve][1] == color, f"{curve!r}: {seen[curve][1]} in {seen[curve][0]}, {color} in {fid}"
            else:
                seen[curve] = (fid, color)
    assert compared >= 10, "too few labels shared by two figures to compare"
    # and the labels named in the brief: TS, Ensemble++, GLM-ES (paper style: grey, dashed)
    by_label = {c: col for c, (_f, col) in seen.items()}
    assert by_label["Ensemble++"] == mcolors.to_hex(methods.FAMILIES["Ensemble++"][0])
    assert by_label["GLM-ES"] == mcolors.to_hex(methods.agent_look("glm_es")[0])
    assert by_label["Lin-ES"] == mcolors.to_hex(methods.FAMILIES["ensemble sampling"][0])


def test_a_line_of_one_method_in_a_sweep_takes_the_method_colour():
    df, spec = plotting.demo("final_vs_param")     # hue: method (Ensemble++ and ES lines), TS as a band
    spec = {**spec, "methods": {c: ("ensemble_pp" if c.startswith("Ensemble++") else
                                    "ensemble_sampling" if c.startswith("ES") else "lints") for c in spec["curves"]}}
    with plt.rc_context(style.rc_params()):
        fig = plotting._PLOTTERS["final_vs_param"](df, spec, dict(spec["plot"]))
    handles, labels = fig.axes[0].get_legend_handles_labels()
    if not handles and fig.legends:
        handles, labels = fig.legends[0].legend_handles, [t.get_text() for t in fig.legends[0].get_texts()]
    colours = {lab: mcolors.to_hex((h.lines[0] if hasattr(h, "lines") else h).get_color())
               for h, lab in zip(handles, labels)}
    plt.close(fig)
    want = mcolors.to_hex(methods.FAMILIES["Ensemble++"][0])
    assert any(lab.endswith("Ensemble++") and col == want for lab, col in colours.items()), colours


def test_method_look_shades_a_family_and_marks_readings():
    curves = ["Lin-ES", "Lin-ES, ablation", "Lin-TS", "Lin-TS [code]"]
    spec = {"methods": {"Lin-ES": "ensemble_sampling", "Lin-ES, ablation": "ensemble_sampling", "Lin-TS": "lints",
                        "Lin-TS [code]": "lints"}, "readings": {"Lin-TS [code]": "Lin-TS"}}
    st = style.curve_styles(pd.DataFrame({"curve": curves}), curves, {}, spec)
    grey, orange = methods.FAMILIES["ensemble sampling"][0], methods.FAMILIES["Thompson sampling"][0]
    assert np.allclose(st["Lin-ES"]["color"], grey) and st["Lin-ES"]["linestyle"] == "--"
    assert not np.allclose(st["Lin-ES, ablation"]["color"], grey)           # a shade of grey
    assert st["Lin-ES, ablation"]["linestyle"] != "--"
    assert np.allclose(st["Lin-TS"]["color"], orange) and np.allclose(st["Lin-TS [code]"]["color"], orange)
    assert st["Lin-TS [code]"]["linestyle"] == methods.READING_LINESTYLE
    # two readings: each its own line style, the same for every base curve
    two = curves + ["Lin-ES [code]", "Lin-TS [once]", "Lin-ES [once]"]
    spec2 = {"methods": {**spec["methods"], "Lin-ES [code]": "ensemble_sampling", "Lin-TS [once]": "lints",
                         "Lin-ES [once]": "ensemble_sampling"},
             "readings": {**spec["readings"], "Lin-ES [code]": "Lin-ES", "Lin-TS [once]": "Lin-TS",
                          "Lin-ES [once]": "Lin-ES"}}
    st2 = style.curve_styles(pd.DataFrame({"curve": two}), two, {}, spec2)
    assert st2["Lin-ES [code]"]["linestyle"] == st2["Lin-TS [code]"]["linestyle"] == methods.READING_LINESTYLE
    assert st2["Lin-ES [once]"]["linestyle"] == st2["Lin-TS [once]"]["linestyle"] != methods.READING_LINESTYLE
    one_family = style.curve_styles(pd.DataFrame({"curve": curves[:2]}), curves[:2], {}, spec)
    assert not np.allclose(one_family["Lin-ES"]["color"], grey)   # a sweep of one method: ordered palette


def test_a_reading_of_one_method_sweep_keeps_its_base_curves_colour():
    # epp-fig11: one method (C values) under two readings; a "*" line style override leaves the readings theirs
    base = ["C = T/10", "C = T"]
    curves = base + [f"{c} [code]" for c in base] + [f"{c} [fast]" for c in base]
    spec = {"methods": dict.fromkeys(curves, "ensemble_pp_neural"),
            "readings": {f"{c} [{r}]": c for c in base for r in ("code", "fast")}}
    for plot in ({}, {"linestyles": {"*": ":", "C = T": "-"}}):
        st = style.curve_styles(pd.DataFrame({"curve": curves}), curves, plot, spec)
        assert not np.allclose(st["C = T/10"]["color"], st["C = T"]["color"])
        for c in base:
            assert np.allclose(st[f"{c} [code]"]["color"], st[c]["color"])
            assert np.allclose(st[f"{c} [fast]"]["color"], st[c]["color"])
            assert st[f"{c} [code]"]["linestyle"] == methods.READING_LINESTYLES[0]
            assert st[f"{c} [fast]"]["linestyle"] == methods.READING_LINESTYLES[1]


def test_a_reading_of_a_hue_sweep_keeps_its_hue_in_its_reading_line_style():
    # epp-fig4: M as hue; the readings' M = 2 and M = 16 must not draw exactly as the paper text's
    base = ["M = 2", "M = 16"]
    curves = base + [f"{c} [code]" for c in base] + [f"{c} [fast]" for c in base]
    df = pd.DataFrame({"curve": curves, "M": [2, 16] * 3})
    spec = {"methods": dict.fromkeys(curves, "ensemble_pp_neural"),
            "readings": {f"{c} [{r}]": c for c in base for r in ("code", "fast")}}
    st = style.curve_styles(df, curves, {"hue_by": "M"}, spec)
    for c in base:
        assert st[c]["linestyle"] == "-"
        for i, r in enumerate(("code", "fast")):
            assert np.allclose(st[f"{c} [{r}]"]["color"], st[c]["color"])
            assert st[f"{c} [{r}]"]["linestyle"] == methods.READING_LINESTYLES[i]


@pytest.mark.parametrize("text, want", [
    ("s = sigma = 0.5", r"s = $\sigma$ = 0.5"),
    ("beta_T", r"$\beta_{T}$"),
    ("prior W ~ N(0, lambda sigma_R^2 I)", r"prior W ~ N(0, $\lambda$ $\sigma_{R}^{2}$ I)"),
    ("T = 10^4", r"T = $10^{4}$"),
    ("M <= 2d", "M ≤ 2d"),
    ("GLM-ES-DT100 (m = 10)", "GLM-ES-DT100 (m = 10)"),
    ("betas and etas", "betas and etas"),
    ("already $\\sigma$", "already $\\sigma$"),
])
def test_labels_become_mathtext(text, want):
    assert style.pretty(text) == want


@pytest.mark.parametrize("kind", plotting.KINDS)
def test_every_kind_reads_at_page_width(kind):
    df, spec = plotting.demo(kind)
    with plt.rc_context(style.rc_params()):
        drawn = plotting._PLOTTERS[kind](df, spec, dict(spec.get("plot") or {}))
        fig = drawn[0] if kind == "table" else drawn
        try:
            assert legibility.figure_problems(fig) == []
        finally:
            plt.close(fig)


def test_the_figure_check_fails_a_figure_a_reader_cannot_read():
    fig, ax = plt.subplots(figsize=(16, 3))
    x = np.arange(100)
    ax.plot(x, x, label="a line under its legend")
    ax.legend(loc="center")
    ax.set_xticks([10, 11, 12])
    ax.set_xticklabels(["ten thousand", "eleven thousand", "twelve thousand"])
    ax.text(50, 20, "tiny", fontsize=5)
    problems = legibility.figure_problems(fig)
    plt.close(fig)
    assert any("pt when printed" in p for p in problems)
    assert any("overlap" in p for p in problems)
    assert any("legend covers data" in p for p in problems)


def test_finishing_a_figure_thins_colliding_ticks_and_moves_a_covering_legend():
    fig, ax = plt.subplots(figsize=(4, 3))
    x = np.linspace(1, 1000, 200)
    for k in range(6):
        ax.plot(x, np.full_like(x, k), label=f"curve {k}")      # lines everywhere: no free corner
    ax.set_xscale("log")
    ax.set_xticks([100, 200, 500, 1000])
    ax.set_xticklabels(["100", "200", "500", "1000"])
    ax.legend(loc="center")
    style.finish_figure(fig, {"id": "x", "title": "t"}, "regret_curves", "footer")
    assert legibility.figure_problems(fig) == []
    assert ax.get_legend() is None and fig.legends        # beside the panels now
    plt.close(fig)


def _wide_last_tick(fig_width=4):
    fig, ax = plt.subplots(figsize=(fig_width, 3))
    x = np.linspace(0, 100000, 50)
    ax.plot(x, np.sqrt(x), label="a curve")
    ax.set_xlim(0, 100000)
    ax.set_xticks([0, 50000, 100000])
    ax.set_xticklabels(["0", "50000", "100000"])
    return fig, ax


def test_the_figure_check_fails_a_legend_beside_the_panels_over_a_tick_label():
    fig, ax = _wide_last_tick()
    right = ax.get_position().x1                     # the frame's edge: the last label sticks out past it
    fig.legend(*ax.get_legend_handles_labels(), loc="center left", bbox_to_anchor=(right + 0.005, 0.12))
    problems = legibility.figure_problems(fig)
    plt.close(fig)
    assert any("covers the tick label '100000'" in p for p in problems), problems


LONG_TITLE = "Regret-compute trade-off on the quadratic bandit: Ensemble++ vs Ensemble+ vs EpiNet (Fig. 1)"
LONG_FOOTER = "epp-fig1 · scale=paper · n=10 seeds · band: mean ± 95% t-CI · replicates Fig. 1, arXiv 2407.13195"


@pytest.mark.parametrize("title, footer", [("t", "footer"), (LONG_TITLE, LONG_FOOTER)], ids=["short", "long"])
def test_a_legend_outside_the_panels_goes_below_them_clear_of_their_tick_labels_and_above_the_footer(title, footer):
    """Beside the panels, a legend of long labels took more of the image's width than they did (a
    panel used about 35 % of the image's width): below them, the panels fill the width.  So they do
    under a title and a footer twice a panel's width (the image was as wide as the title, the panel
    took 40 % of it): the figure widens and they break into lines, every word kept."""
    fig, ax = _wide_last_tick()
    style.place_legend(ax, *ax.get_legend_handles_labels(), loc="outside")
    style.finish_figure(fig, {"id": "x", "title": title}, "regret_curves", footer)
    assert fig._suptitle.get_text().split() == title.split()
    assert fig._eb_footer.get_text().replace("\n", " · ") == footer
    renderer = legibility._renderer(fig)
    lowest = min(t.get_window_extent(renderer).y0 for t in [*ax.get_xticklabels(), ax.xaxis.label] if t.get_text())
    leg = fig.legends[0].get_window_extent(renderer)
    assert leg.y1 < lowest
    assert fig._eb_footer.get_window_extent(renderer).y1 < leg.y0
    whole = fig.get_tightbbox(renderer).width * fig.dpi
    assert ax.get_window_extent(renderer).width > 0.7 * whole
    assert legibility.figure_problems(fig) == []
    plt.close(fig)


def _ratio_table(n_facets=10, n_panels=3):
    rng = np.random.default_rng(1)
    rows = []
    names = ["gaussian", "sphere", "cube", "coordinate", "sparse"]
    for p in range(n_panels):
        rows += [dict(panel=f"|X| = {10 ** (p + 2)}", curve="TS", seed=s, t=10, regret=50.0, M=np.nan,
                      reference=None, perturbation=None) for s in range(3)]
        for M in 2 ** np.arange(1, n_facets + 1):
            for r in names:
                for q in names:
                    rows += [dict(panel=f"|X| = {10 ** (p + 2)}", curve=f"{r}-{q} M={M}", seed=s, t=10,
                                  regret=50.0 * np.exp(rng.normal(0, 0.5)), M=float(M), reference=r, perturbation=q)
                             for s in range(3)]
    return pd.DataFrame(rows)


def test_ratio_heatmaps_share_one_diverging_scale_centred_at_one_and_fit_a_page():
    df = _ratio_table()
    spec = {"id": "epp-fig8a", "title": "t (Fig. 8a)", "plot": {"normalise_by": "TS"}}
    with plt.rc_context(style.rc_params()):
        fig = heatmap.draw(df, spec, spec["plot"])
    images = [im for ax in fig.axes for im in ax.get_images()]
    assert len(images) == 30
    norms = {(im.norm.vcenter, im.norm.halfrange) for im in images}
    assert len(norms) == 1 and next(iter(norms))[0] == 0.0       # one scale, log2 ratio centred at 0
    assert fig.get_size_inches()[0] <= 11 and legibility.figure_problems(fig) == []
    plt.close(fig)


def test_tables_name_their_columns_and_round_to_three_digits():
    df = pd.DataFrame({"curve": ["LinTS"], "seconds_median": [0.0123456], "seconds_q1": [0.01], "junk": [1]})
    fig, md = table_kind.draw(df, {"id": "phe-runtime"}, {"columns": {"curve": "agent", "seconds_median": "median s"}})
    plt.close(fig)
    assert list(md.columns) == ["agent", "median s"] and md.iloc[0, 1] == "0.0123"
    with pytest.raises(ValueError, match="plot.columns names \\['nope'\\]"):
        table_kind.draw(df, {}, {"columns": {"nope": "x"}})


def test_the_papers_stated_numbers_are_drawn_beside_ours_and_marked(entries):
    """The live registry as data: the live registry states paper values somewhere; a table draws them beside ours,
    marked."""
    assert any(e.get("paper_values") for e in entries.values())
    df = pd.DataFrame({"curve": ["LinTS, one run at a time", "LinTS, batched"], "seconds_median": [0.35, 0.01]})
    spec = {"paper_values": [{"label": "run times", "quote": "q", "column": "paper's s / run",
                              "values": {"LinTS, one run at a time": 273}}]}
    fig, md = table_kind.draw(df, spec, {"columns": {"curve": "agent", "seconds_median": "median s"}})
    plt.close(fig)
    assert list(md.columns) == ["agent", "median s", "paper's s / run"] and md.iloc[:, 2].tolist() == ["273", ""]
    # a value the paper states for one setting (panel) stays off the rows of the others
    two = pd.concat([df.assign(panel="d = 5"), df.assign(panel="d = 10")], ignore_index=True)
    spec["paper_values"][0]["panel"] = "d = 5"
    fig, md = table_kind.draw(two, spec, {"columns": {"panel": "setting", "curve": "agent"}})
    plt.close(fig)
    assert md.iloc[:, 2].tolist() == ["273", "", "", ""]
    curves, cspec = plotting.demo("regret_curves")
    cspec = {**cspec, "horizon": 1000, "paper_values": [{"label": "final regret", "quote": "q", "y": 500.0,
                                                        "panel": cspec["panels"][0]}]}
    with plt.rc_context(style.rc_params()):
        fig = plotting._PLOTTERS["regret_curves"](curves, cspec, dict(cspec.get("plot") or {}))
    marked = [ln for ax in fig.axes for ln in ax.get_lines() if ln.get_label() == "paper: final regret"]
    texts = [t.get_text() for leg in fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
             for t in leg.get_texts()]
    plt.close(fig)
    assert len(marked) == 1 and tuple(marked[0].get_xydata()[0]) == (1000.0, 500.0)
    assert "paper: final regret" in texts


def test_crowded_category_names_turn_upright_and_none_is_dropped():
    names = ["gaussian", "rademacher", "uniform", "binomial", "gaussian, spherical W"]
    fig, ax = plt.subplots(figsize=(3, 3))
    ax.bar(range(5), [1, 2, 3, 2, 1])
    ax.set_xticks(range(5))
    ax.set_xticklabels(names, rotation=30, ha="right")
    h0 = fig.get_size_inches()[1]
    style.finish_figure(fig, {"id": "x", "title": "t"}, "final_vs_param", "footer")
    fig.canvas.draw()
    shown = [t.get_text() for t in ax.get_xticklabels() if t.get_visible()]
    assert shown == names and all(t.get_rotation() == 90 for t in ax.get_xticklabels())
    assert fig.get_size_inches()[1] > h0 and legibility.figure_problems(fig) == []
    plt.close(fig)


def test_the_figure_check_fails_table_text_over_its_cell():
    fig, ax = plt.subplots(figsize=(3, 1))
    ax.axis("off")
    tab = ax.table(cellText=[["a cell text far too long for its cell"]], colWidths=[0.2], loc="center")
    tab.auto_set_font_size(False)        # matplotlib would otherwise shrink the text to fit
    tab.set_fontsize(10)
    problems = legibility.figure_problems(fig)
    plt.close(fig)
    assert any("runs over its cell" in p for p in problems)


def test_a_wide_table_with_bold_headers_keeps_its_text_in_its_cells():
    """Nine columns with long headers (phe-runtime's): the widths are measured in the font, bold
    headers included, at the dpi the figure is saved at."""
    from ensemble_bandits.plotting import table

    headers = ["agent, how timed", "setting", "runs", "median s / run", "1st quartile", "3rd quartile",
               "µs / round (median)", "random numbers / round", "paper's s / run (its text; hardware unknown)"]
    rows = [["LinTS (square-root update), one run at a time", "d = 20", 100, 0.921, 0.864, 0.996, 92.1, 20, 273.0],
            ["LinPHE (a = 0.5), batched", "d = 5", 100, 0.0628, 0.0625, 0.0631, 6.28, None, None]]
    with plt.rc_context(style.rc_params()):
        fig, _ = table.draw(pd.DataFrame(rows, columns=headers), {"id": "phe-runtime", "title": "t"}, {})
        try:
            assert legibility.figure_problems(fig) == []
        finally:
            plt.close(fig)
