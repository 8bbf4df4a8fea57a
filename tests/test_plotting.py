"""Tests of ensemble_bandits.plotting and the papermill notebooks (fast: no simulation)."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
from helpers import timeout_s

from ensemble_bandits import plotting

NB_DIR = Path(__file__).resolve().parents[1] / "notebooks"


# ------------------------------------------------------------------ statistics
VALUES = [1.0, 2.0, 3.0, 6.0]  # mean 3, sample sd sqrt(14/3)


@pytest.mark.parametrize(
    "kind, half",
    [
        ("sd", math.sqrt(14 / 3)),
        ("se", math.sqrt(14 / 3) / 2),
        ("ci95", 3.182446305284263 * math.sqrt(14 / 3) / 2),  # t_{0.975, 3}
    ],
)
def test_band_hand_computed(kind, half):
    mean, lo, hi = plotting.band(VALUES, kind)
    assert mean == pytest.approx(3.0)
    assert lo == pytest.approx(3.0 - half)
    assert hi == pytest.approx(3.0 + half)


def test_band_edge_cases():
    assert plotting.band([5.0], "ci95") == (5.0, 5.0, 5.0)  # one seed: zero width
    assert plotting.band([1.0, np.nan, 3.0], "sd")[0] == pytest.approx(2.0)  # NaN dropped
    with pytest.raises(ValueError, match="known bands"):
        plotting.band(VALUES, "iqr")
    with pytest.raises(ValueError):
        plotting.band([np.nan], "se")


def test_summarise_matches_band():
    df = pd.DataFrame({"g": ["a"] * 4 + ["b"] * 2, "y": VALUES + [10.0, 12.0]})
    s = plotting.summarise(df, ["g"], "y", "ci95").set_index("g")
    for g, vals in (("a", VALUES), ("b", [10.0, 12.0])):
        m, lo, hi = plotting.band(vals, "ci95")
        assert s.loc[g, "mean"] == pytest.approx(m)
        assert s.loc[g, "lo"] == pytest.approx(lo)
        assert s.loc[g, "hi"] == pytest.approx(hi)
        assert s.loc[g, "n"] == len(vals)


def test_fit_through_origin():
    c, r2 = plotting.fit_through_origin([1, 2, 3], [2, 4, 6])
    assert c == pytest.approx(2.0) and r2 == pytest.approx(1.0)
    c, _ = plotting.fit_through_origin([1, 2, np.nan], [1, 3, 5])
    assert c == pytest.approx((1 + 6) / 5)


def test_final_rows():
    df = pd.DataFrame({"panel": "p", "curve": ["a", "a", "b", "b"], "t": [1, 5, 1, 3], "regret": [0, 1, 2, 3]})
    f = plotting.final_rows(df)
    assert f["t"].tolist() == [5, 3]


# ------------------------------------------------------------------ rendering
def _check(written, tmp_path):
    for key in ("pdf", "png"):
        p = Path(written[key])
        assert p.exists() and p.stat().st_size > 1000, p
    assert not list(tmp_path.glob(".*")), "temporary files left behind"


@pytest.mark.parametrize("kind", plotting.KINDS)
def test_render_demo(kind, tmp_path):
    written = plotting.render(kind, None, None, tmp_path / f"{kind}.pdf", tmp_path / "sub" / f"{kind}.png")
    _check(written, tmp_path / "sub")
    assert Path(written["png"]).read_bytes()[:4] == b"\x89PNG"
    assert Path(written["pdf"]).read_bytes()[:4] == b"%PDF"
    if kind == "table":
        md = Path(written["md"])
        assert md == tmp_path / "table.md"
        text = md.read_text()
        assert "| algorithm" in text and "\\|X\\|" in text
        tex = Path(written["tex"]).read_text()          # and as LaTeX, captioned and labelled
        assert "\\begin{tabular}" in tex and "\\label{tab:" in tex and "algorithm" in tex


def test_render_from_files(tmp_path):
    """Paths, as papermill passes them: a parquet table and a JSON spec."""
    df, spec = plotting.demo("regret_curves")
    df.to_parquet(tmp_path / "t.parquet")
    spec = {**spec, "id": "phe-fig1", "scale": "smoke"}
    (tmp_path / "s.json").write_text(json.dumps(spec))
    written = plotting.render("regret_curves", str(tmp_path / "t.parquet"), str(tmp_path / "s.json"),
                              str(tmp_path / "f.pdf"), str(tmp_path / "f.png"))
    _check(written, tmp_path)


def test_regret_curves_options(tmp_path):
    df, spec = plotting.demo("regret_curves")
    spec["plot"] = {"hue_by": "a", "style_by": "method", "black": ["LinTS"], "ncols": 2, "logy": True,
                    "legend_loc": "outside", "y": "regret"}
    _check(plotting.render("regret_curves", df, spec, tmp_path / "a.pdf", tmp_path / "a.png"), tmp_path)
    # many curves, a panel without data, a diagnostics column
    many = pd.concat([df.assign(curve=df["curve"] + f" #{i}") for i in range(3)], ignore_index=True)
    spec = {"id": "x", "band": "sd", "panels": ["d = 10", "missing"],
            "plot": {"y": "optfrac", "logx": True, "hline": 0.5, "style_by": None}}
    with pytest.warns(UserWarning):  # spec.kind mismatch is warned about, not fatal
        plotting.render("regret_curves", many, {**spec, "kind": "heatmap"}, tmp_path / "b.pdf", None)
    assert (tmp_path / "b.pdf").stat().st_size > 1000 and not (tmp_path / "b.png").exists()


def _spread_runs(spread):
    """Two curves of 20 seeds whose final regrets differ by 10 and spread by ``spread`` (s.d.)."""
    rng = np.random.default_rng(0)
    rows = []
    for c, end in (("A", 100.0), ("B", 110.0)):
        for seed, z in enumerate(rng.standard_normal(20)):
            rows += [{"panel": "p", "curve": c, "seed": seed, "t": t, "regret": (end + spread * z) * t / 1000}
                     for t in (100, 250, 500, 750, 1000)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("spread, band, style, bars", [
    (50.0, "sd", "auto", True),       # s.d. bands that overlap: bars at a few rounds
    (1.0, "sd", "auto", False),       # s.d. bands apart: filled
    (50.0, "ci95", "auto", False),    # "auto" turns only s.d. bands into bars
    (50.0, "sd", "fill", False),
    (1.0, "ci95", "bars", True),
])
def test_overlapping_sd_bands_become_bars(spread, band, style, bars):
    import matplotlib.collections as mc
    import matplotlib.pyplot as plt

    fig = plotting.regret_curves.draw(_spread_runs(spread), {"id": "x", "band": band}, {"band_style": style})
    ax = fig.axes[0]
    fills = [c for c in ax.collections if isinstance(c, mc.PolyCollection)]
    errorbars = [c for c in ax.collections if isinstance(c, mc.LineCollection)]
    footer = next(t.get_text() for t in fig.texts if "scale=" in t.get_text())
    plt.close(fig)
    assert (len(errorbars) == 2 and not fills) if bars else (len(fills) == 2 and not errorbars)
    assert (f"bars: {plotting.BANDS[band]}" in footer) == bars and (f"band: {plotting.BANDS[band]}" in footer) != bars


def test_on_top_draws_the_baseline_over_the_other_curves():
    import matplotlib.pyplot as plt

    fig = plotting.regret_curves.draw(_spread_runs(1.0), {"id": "x", "band": "ci95"}, {"on_top": ["A"]})
    z = {ln.get_label(): ln.get_zorder() for ln in fig.axes[0].get_lines()}
    plt.close(fig)
    assert z["A"] > z["B"]


def test_split_readings_draws_each_reading_in_a_panel_of_its_own():
    """Plot option split_readings: the paper text's curves and each reading's in panels of their own
    (only the panel/reading pairs that hold data, a reading's label without the panel's name it
    repeats), each method under its base curve's name and look, the readings of one panel on one y
    range, the legend naming each method once."""
    import matplotlib.pyplot as plt

    runs = _spread_runs(1.0)
    other = runs.assign(panel="q")
    code = runs.assign(curve=runs["curve"] + " [code (G = 4)]", regret=runs["regret"] * 3)
    code_q = other.assign(curve=other["curve"] + " [code (G = 4), q]")
    df = pd.concat([runs, other, code, code_q], ignore_index=True)
    readings = {"A [code (G = 4)]": "A", "B [code (G = 4)]": "B", "A [code (G = 4), q]": "A",
                "B [code (G = 4), q]": "B"}
    spec = {"id": "x", "band": "ci95", "panels": ["p", "q"], "readings": readings,
            "methods": {"A": "ensemble_pp_neural", "B": "epinet"}}
    fig = plotting.regret_curves.draw(df, spec, {"split_readings": True})
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["p\nthe paper's text", "p\ncode (G = 4)", "q\nthe paper's text", "q\ncode (G = 4)"]
    for ax in fig.axes:
        assert sorted(ln.get_label() for ln in ax.get_lines()) == ["A", "B"]
        assert {ln.get_linestyle() for ln in ax.get_lines()} == {"-"}
    assert fig.axes[0].get_ylim() == fig.axes[1].get_ylim() and fig.axes[0].get_ylim()[1] > 300
    colours = {}
    for ax in fig.axes:
        for ln in ax.get_lines():
            colours.setdefault(ln.get_label(), set()).add(str(ln.get_color()))
    assert all(len(c) == 1 for c in colours.values()) and colours["A"] != colours["B"]   # one look per method
    labels = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert labels == ["A", "B"]
    plt.close(fig)


def test_a_band_style_that_does_not_exist_is_named():
    with pytest.raises(ValueError, match="band_style 'dots' is not one of auto, fill, bars"):
        plotting.regret_curves.draw(_spread_runs(1.0), {"id": "x", "band": "sd"}, {"band_style": "dots"})


def test_final_vs_param_options(tmp_path):
    df, spec = plotting.demo("final_vs_param")
    spec["plot"] = {"x": "M", "logx": True, "logy": True, "base": 2, "hlines": ["TS"], "reference_slope": -0.5}
    _check(plotting.render("final_vs_param", df, spec, tmp_path / "a.pdf", tmp_path / "a.png"), tmp_path)
    # categorical x, grouped bars
    bars = df[df["M"] == 8].copy()
    spec = {"id": "bars", "band": "se", "plot": {"x": "reference", "hue": "method", "kind": "bar",
                                                 "hlines": ["TS"]}}
    bars = pd.concat([bars, df[df["curve"] == "TS"]])
    _check(plotting.render("final_vs_param", bars, spec, tmp_path / "b.pdf", tmp_path / "b.png"), tmp_path)


def test_heatmap_unnormalised(tmp_path):
    df, spec = plotting.demo("heatmap")
    df = df[(df["panel"] == spec["panels"][0]) & (df["M"].isna() | (df["M"] == 8))]
    spec["plot"] = {"facet": "M", "row_order": ["Sparse", "Gaussian"]}
    _check(plotting.render("heatmap", df, spec, tmp_path / "h.pdf", tmp_path / "h.png"), tmp_path)


def test_min_ensemble_size_draws_the_grid_panels_on_one_axis():
    """epp-fig2b's derived table has one row per simulated (d, |X|) panel: M_min against d is one axis
    with a line per |X| (not one axis per panel); a table with several rows per panel keeps its panels."""
    from ensemble_bandits.plotting import min_ensemble_size

    df, spec = plotting.demo("min_ensemble_size")
    df["panel"] = [f"d = {d}, |X| = {n}" for d, n in zip(df["d"], df["n_arms"])]
    spec = {**spec, "panels": list(df["panel"])}
    fig = min_ensemble_size.draw(df, spec, {})
    assert len(fig.axes) == 1 and len(fig.axes[0].lines) == 3 + 1            # 3 |X| lines and the fit
    df["panel"] = np.where(df["n_arms"] == 100, "a", "b")
    assert len(min_ensemble_size.draw(df, {**spec, "panels": ["a", "b"]}, {}).axes) == 2


def test_min_ensemble_size_names_the_intervals_it_draws():
    """The fit's legend line gives the slope's and R^2's intervals of the kind the plot asks for
    (epp-fig2b's claim decides on BCa intervals; its plot showed an unnamed percentile interval): the
    numbers of claims.trends.fit_intervals on the same rows, named "BCa" or "percentile"."""
    from ensemble_bandits.claims.trends import fit_intervals
    from ensemble_bandits.plotting import min_ensemble_size

    df, spec = plotting.demo("min_ensemble_size")
    df["panel"] = [f"d = {d}, |X| = {n}" for d, n in zip(df["d"], df["n_arms"])]
    df["replicate"] = 0
    rng = np.random.default_rng(1)
    boot = [df.assign(replicate=r, M_min=df["M_min"] + rng.integers(0, 9, len(df))) for r in range(1, 41)]
    jack = [df.assign(replicate=-s, M_min=df["M_min"] + rng.integers(-2, 3, len(df))) for s in range(1, 6)]
    table = pd.concat([df, *boot, *jack], ignore_index=True)
    spec = {**spec, "panels": list(df["panel"])}
    for interval, name in (("bca", "BCa"), ("percentile", "percentile")):
        ax = min_ensemble_size.draw(table, spec, {"interval": interval}).axes[0]
        fit = next(t.get_text() for t in ax.get_legend().get_texts() if t.get_text().startswith("LS fit"))
        (lo, hi), (r_lo, r_hi) = fit_intervals(table, interval=interval)
        assert f"{name} bootstrap 95 %: slope [{lo:.3g}, {hi:.3g}], R² [{r_lo:.2f}, {r_hi:.2f}]" in fit
    assert fit_intervals(table, interval="bca")[0] != fit_intervals(table, interval="percentile")[0]


def test_censored_settings_have_one_neutral_legend_entry_and_a_marker_no_line_uses():
    """epp-fig2b's censored settings were drawn as filled triangles, the marker of the third |X| line."""
    from ensemble_bandits.plotting import min_ensemble_size

    df, spec = plotting.demo("min_ensemble_size")
    df = df.assign(M_max_tried=200.0)
    df.loc[df.index[[-1, -2]], "M_min"] = np.nan                    # two settings never matched
    ax = min_ensemble_size.draw(df, spec, {}).axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels.count("never matched: above the largest M tried") == 1
    assert len({line.get_marker() for line in ax.lines if line.get_marker() not in ("None", "")}) == 3
    assert min_ensemble_size.CENSORED not in {line.get_marker() for line in ax.lines}


def test_errors(tmp_path):
    with pytest.raises(ValueError, match="known kinds: regret_curves"):
        plotting.render("scatter", None, None, tmp_path / "x.pdf", tmp_path / "x.png")
    df, spec = plotting.demo("regret_curves")
    with pytest.raises(ValueError, match="lacks column"):
        plotting.render("regret_curves", df.drop(columns="t"), spec, tmp_path / "x.pdf", None)
    with pytest.raises(ValueError, match="plot.x"):
        plotting.render("final_vs_param", df, {"id": "y"}, tmp_path / "x.pdf", None)
    with pytest.raises(ValueError, match="table is required"):
        plotting.render("heatmap", None, {"id": "z"}, tmp_path / "x.pdf", None)
    with pytest.raises(FileNotFoundError):
        plotting.render("heatmap", tmp_path / "nope.parquet", None, tmp_path / "x.pdf", None)
    assert not list(tmp_path.iterdir())


def test_demo_deterministic():
    a, _ = plotting.demo("regret_curves")
    b, _ = plotting.demo("regret_curves")
    pd.testing.assert_frame_equal(a, b)


def test_demo_data_off_production_path(tmp_path, monkeypatch):
    """Rendering a real table never imports the demo module; plotting.demo stays the function."""
    df, spec = plotting.demo("function_curve")
    monkeypatch.delitem(sys.modules, "ensemble_bandits.plotting.demo_data")
    plotting.render("function_curve", df, spec, tmp_path / "f.pdf", None)
    assert "ensemble_bandits.plotting.demo_data" not in sys.modules
    assert callable(plotting.demo)


# ------------------------------------------------------------------ notebooks
NOTEBOOKS = sorted(NB_DIR.glob("*.ipynb"))


def test_one_notebook_per_kind():
    assert sorted(p.stem for p in NOTEBOOKS) == sorted(plotting.KINDS)


def test_the_notebooks_are_what_their_template_gives(tmp_path, monkeypatch):
    """tools/notebooks.py writes every kind's notebook from notebooks/template.ipynb.in; the committed
    ones are its output, and a notebook edited by hand is named."""
    sys.path.insert(0, str(NB_DIR.parent / "tools"))
    try:
        import notebooks as generator
    finally:
        sys.path.pop(0)
    wanted = generator.notebooks()
    assert sorted(wanted) == NOTEBOOKS
    assert all(path.read_text(encoding="utf-8") == text for path, text in wanted.items())
    monkeypatch.setattr(generator, "NOTEBOOKS", tmp_path)
    monkeypatch.setattr(generator, "TEMPLATE", NB_DIR / "template.ipynb.in")
    assert generator.main([]) == 0 and generator.main(["--check"]) == 0
    (tmp_path / "heatmap.ipynb").write_text("{}")
    assert generator.main(["--check"]) == 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_clean_and_parameterised(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert nb.metadata["language_info"]["name"] == "python"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code)
    tagged = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    for name in ("table", "spec", "out_pdf", "out_png"):
        assert f"{name} = " in tagged[0].source
    assert f'plotting.render("{path.stem}"' in "".join(c.source for c in code)


def test_notebook_runs_standalone(tmp_path):
    """Through the figure rule's command (ensemble_bandits.plotting.execute), on the kind's demo."""
    pytest.importorskip("papermill")
    out_pdf, out_png = tmp_path / "fig.pdf", tmp_path / "fig.png"
    res = subprocess.run([sys.executable, "-m", "ensemble_bandits.plotting.execute",
                          str(NB_DIR / "function_curve.ipynb"), str(tmp_path / "executed.ipynb"),
                          f"out_pdf={out_pdf}", f"out_png={out_png}"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=timeout_s(300))
    assert res.returncode == 0, res.stderr[-3000:]
    assert out_pdf.stat().st_size > 1000 and out_png.stat().st_size > 1000
    executed = nbformat.read(tmp_path / "executed.ipynb", as_version=4)     # and it shows the figure it drew
    assert any("image/png" in o.get("data", {}) for c in executed.cells if c.cell_type == "code"
               for o in c.get("outputs", []))


def test_a_kernel_that_fails_to_start_is_started_again_and_a_notebook_error_is_not(capsys):
    from ensemble_bandits.plotting import execute

    calls = []

    def flaky(nb, out, **kw):
        calls.append(kw["parameters"])
        if len(calls) == 1:
            raise RuntimeError("Kernel died before replying to kernel_info")

    execute.run("nb.ipynb", "out.ipynb", {"table": "t.parquet"}, execute=flaky)
    assert calls == [{"table": "t.parquet"}] * 2
    assert "kernel failed to start" in capsys.readouterr().err

    def broken(nb, out, **kw):
        calls.append(1)
        raise ValueError("a cell failed")

    calls.clear()
    with pytest.raises(ValueError, match="a cell failed"):
        execute.run("nb.ipynb", "out.ipynb", {}, execute=broken)
    assert calls == [1]

    def dead(nb, out, **kw):
        calls.append(1)
        raise RuntimeError("Kernel died before replying to kernel_info")

    calls.clear()
    with pytest.raises(RuntimeError, match="kernel_info"):
        execute.run("nb.ipynb", "out.ipynb", {}, attempts=2, execute=dead)
    assert calls == [1, 1]


def test_log_x_within_two_decades_has_readable_ticks():
    """More than 12 x values on a log axis spanning less than a decade (epp-fig1's parameter counts):
    plain major labels across the whole data range (at most 0.2 decades apart), none overlapping,
    and no minor labels."""
    import matplotlib.pyplot as plt

    from ensemble_bandits.plotting import final_vs_param

    df, spec = plotting.demo("final_vs_param")
    df = df[df["curve"] != "TS"].copy()
    codes = {c: i for i, c in enumerate(sorted(df["curve"].unique()))}
    copies = []
    for k in range(2):                       # 20 curves, 20 distinct x values from 10,945 to 49,963
        part = df.assign(curve=df["curve"] + f" #{k}")
        part["params"] = [10_945 * (49_963 / 10_945) ** ((2 * codes[c] + k) / 19) for c in df["curve"]]
        copies.append(part)
    df = pd.concat(copies, ignore_index=True)
    spec = {**spec, "curves": sorted(df["curve"].unique()), "panels": list(df["panel"].unique())}
    fig = final_vs_param.draw(df, spec, {"x": "params", "hue": "method", "logx": True})
    fig.canvas.draw()
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    shown = [t for t in ax.xaxis.get_majorticklabels() if t.get_text() and t.get_visible()
             and ax.get_xlim()[0] <= t.get_position()[0] <= ax.get_xlim()[1]]
    labels = [float(t.get_text()) for t in shown]
    assert labels[0] <= 15_000 and labels[-1] >= 40_000          # no stretch of the data without a label
    assert max(math.log10(b / a) for a, b in zip([10_945] + labels, labels + [49_963])) < 0.2
    boxes = sorted((t.get_window_extent(renderer) for t in shown), key=lambda b: b.x0)
    assert all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:]))
    assert not [t.get_text() for t in ax.xaxis.get_minorticklabels() if t.get_text()]
    plt.close(fig)


def test_the_declared_plot_options_are_what_the_drawing_code_reads():
    """plot_options (checked while the job graph is built) against the keys each kind's module reads."""
    import re

    from ensemble_bandits import plot_options

    pattern = re.compile(r'plot(?:\.get\(|\[)"(\w+)"')
    src = Path(plotting.__file__).parent
    read = lambda name: set(pattern.findall((src / f"{name}.py").read_text()))   # noqa: E731
    assert read("style") == plot_options.COMMON
    for kind, declared in plot_options.OPTIONS.items():
        assert read(kind) == declared, kind
    assert set(plot_options.OPTIONS) == set(plotting.KINDS)


def test_a_misspelt_plot_option_or_static_table_fails_before_any_job(fixture_entries, config):
    from ensemble_bandits import registry, validation
    from ensemble_bandits.registry import RegistryError

    entry = dict(fixture_entries["phe-regret"], plot={"legnd_loc": "outside"})
    fig = registry.resolve(entry, "smoke", config["scales"])
    with pytest.raises(RegistryError, match=r"figure 'phe-regret': plot option\(s\) \['legnd_loc'\] are not read by plot "
                                            r"kind 'regret_curves'; its options: alpha, band_style, black, "):
        validation.check_figure(entry, fig, config["scales"])
    entry = {k: v for k, v in fixture_entries["phe-timing"].items() if k != "derive"} | {"static": {"name": "nope"}}
    fig = registry.resolve(entry, "smoke", config["scales"])
    with pytest.raises(RegistryError, match=r"figure 'phe-timing': unknown static table 'nope'; known: "):
        validation.check_figure(entry, fig, config["scales"])
