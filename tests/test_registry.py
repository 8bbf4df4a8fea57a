"""The registry and its expansion into cells (registry.py), the aggregation helpers (aggregate.py)
and the report (report.py), on hand-written entries, the fixture registry (tests/data/registry) and
synthetic run files; the live registry as data is tests/test_registry_data.py."""
import copy
import itertools
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from ensemble_bandits import claims, paths, registry, report, stats, theory
from ensemble_bandits.aggregate import figure_table, min_ensemble_size, timing_table
from ensemble_bandits.atomic import write_columns_atomic, write_table_atomic
from ensemble_bandits.registry import RegistryError
from ensemble_bandits.stats import final_rows

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "workflow" / "schemas" / "registry.schema.yaml"
CAPS = {"smoke": {"max_seeds": 4, "max_horizon": 300}, "default": {"max_seeds": 30, "max_horizon": 3000},
        "paper": {}}


def test_substitute_typed_field():
    assert registry.substitute("{M}", {"M": 4}) == 4
    assert registry.substitute("{s}", {"s": 0.5}) == 0.5
    assert registry.substitute("{xs}", {"xs": [1, 2]}) == [1, 2]
    assert registry.substitute("{flag}", {"flag": None}) is None


def test_substitute_formats_labels():
    assert registry.substitute("ES++ (M = {M})", {"M": 4}) == "ES++ (M = 4)"
    assert registry.substitute("{r}-{p}", {"r": "gaussian", "p": "sphere"}) == "gaussian-sphere"
    assert registry.substitute("a = {a}", {"a": 0.5}) == "a = 0.5"


def test_substitute_nested_and_non_strings():
    obj = {"label": "M = {M}", "agent": {"name": "x", "M": "{M}", "list": ["{M}", "{d}", 3, 1.5, True]},
           "{M}": "key is not substituted"}
    out = registry.substitute(obj, {"M": 8, "d": 2})
    assert out == {"label": "M = 8", "agent": {"name": "x", "M": 8, "list": [8, 2, 3, 1.5, True]},
                   "{M}": "key is not substituted"}
    assert obj["agent"]["M"] == "{M}"           # the input is not modified


def test_substitute_unknown_fields_left_alone():
    assert registry.substitute("{nope}", {"M": 1}) == "{nope}"
    assert registry.substitute("plain", {"M": 1}) == "plain"
    # known fields are filled even when others are unknown (a later pass fills those)
    assert registry.substitute("M = {M}, d = {d}", {"M": 2}) == "M = 2, d = {d}"
    assert registry.substitute(registry.substitute("M = {M}, d = {d}", {"M": 2}), {"d": 10}) == "M = 2, d = 10"


# ---------------------------------------------------------------------------------------
# resolve on hand-written entries


def entry(**kw):
    base = {"id": "x-fig", "title": "t", "caption": "c", "kind": "regret_curves", "seeds": 10, "horizon": 1000,
            "panels": [{"label": "d = {d}", "env": {"name": "env", "d": "{d}", "n_arms": 10}, "grid": {"d": [2, 3]}}],
            "curves": [{"label": "TS", "agent": {"name": "lints", "prior_var": 1.0}},
                       {"label": "ES (M = {M})", "agent": {"name": "es", "M": "{M}"}, "grid": {"M": [1, 4]}}]}
    base.update(kw)
    return base


def test_resolve_product_of_panels_and_curves():
    fig = registry.resolve(entry(), "paper", CAPS)
    assert fig["panels"] == ["d = 2", "d = 3"]
    assert fig["curves"] == ["TS", "ES (M = 1)", "ES (M = 4)"]
    assert [(s["panel"], s["curve"]) for s in fig["series"]] == list(itertools.product(fig["panels"], fig["curves"]))
    s = fig["series"][4]                                 # d = 3, ES (M = 1)
    assert s["cell"] == {"env": {"name": "env", "d": 3, "n_arms": 10}, "agent": {"name": "es", "M": 1},
                         "horizon": 1000}
    assert s["vars"] == {"d": 3, "M": 1}
    assert s["seeds"] == 10 and s["key"] == registry.cell_key(s["cell"])
    assert fig["series"][0]["vars"] == {"d": 2}
    assert (fig["seeds"], fig["horizon"], fig["scale"], fig["id"]) == (10, 1000, "paper", "x-fig")


def test_resolve_multi_variable_grid():
    e = entry(curves=[{"label": "{r}-{p} (M = {M})", "agent": {"name": "pp", "M": "{M}", "reference": "{r}",
                                                               "perturbation": "{p}"},
                       "grid": {"M": [2, 4], "r": ["g", "s"], "p": ["c"]}}])
    fig = registry.resolve(e, "paper", CAPS)
    assert fig["curves"] == ["g-c (M = 2)", "s-c (M = 2)", "g-c (M = 4)", "s-c (M = 4)"]
    assert len(fig["series"]) == 2 * 4
    assert fig["series"][1]["cell"]["agent"] == {"name": "pp", "M": 2, "reference": "s", "perturbation": "c"}


def test_resolve_scale_caps_from_config():
    e = entry(seeds=100, horizon=10_000)
    smoke = registry.resolve(e, "smoke", CAPS)
    assert (smoke["seeds"], smoke["horizon"]) == (4, 300)
    assert {s["seeds"] for s in smoke["series"]} == {4}
    assert {s["cell"]["horizon"] for s in smoke["series"]} == {300}
    default = registry.resolve(e, "default", CAPS)
    assert (default["seeds"], default["horizon"]) == (30, 3000)
    paper = registry.resolve(e, "paper", CAPS)
    assert (paper["seeds"], paper["horizon"]) == (100, 10_000)
    # caps only reduce; an entry below the cap keeps its own values; no caps at all -> paper values
    small = registry.resolve(entry(seeds=2, horizon=50), "smoke", CAPS)
    assert (small["seeds"], small["horizon"]) == (2, 50)
    assert registry.resolve(e, "smoke", {})["seeds"] == 100


def test_resolve_scale_overrides():
    e = entry(seeds=100, horizon=10_000,
              scales={"smoke": {"seeds": 7, "horizon": 20, "grid": {"M": [8], "d": [5]}},
                      "default": {"horizon": 5000}})
    smoke = registry.resolve(e, "smoke", CAPS)
    assert (smoke["seeds"], smoke["horizon"]) == (7, 20)      # the entry's own override beats the cap
    assert smoke["panels"] == ["d = 5"] and smoke["curves"] == ["TS", "ES (M = 8)"]
    assert smoke["series"][1]["cell"] == {"env": {"name": "env", "d": 5, "n_arms": 10},
                                          "agent": {"name": "es", "M": 8}, "horizon": 20}
    default = registry.resolve(e, "default", CAPS)
    assert (default["seeds"], default["horizon"]) == (30, 5000)   # seeds capped, horizon overridden
    assert default["curves"] == ["TS", "ES (M = 1)", "ES (M = 4)"]


def test_resolve_scale_env_override_reaches_every_panel_at_that_scale_only():
    e = entry(seeds=10, horizon=100, scales={"smoke": {"env": {"posts": 50}}})
    smoke, paper = registry.resolve(e, "smoke", CAPS), registry.resolve(e, "paper", CAPS)
    assert all(s["cell"]["env"]["posts"] == 50 for s in smoke["series"]) and smoke["series"]
    assert all("posts" not in s["cell"]["env"] for s in paper["series"])
    assert {s["key"] for s in smoke["series"]}.isdisjoint(s["key"] for s in paper["series"])


def test_resolve_curve_uses_panel_variables():
    e = entry(panels=[{"label": "s = {s}", "env": {"name": "env"}, "grid": {"s": [0.5, 5.42]}}],
              curves=[{"label": "ES (m = {m})", "agent": {"name": "es", "m": "{m}", "scale": "{s}"},
                       "grid": {"m": [1, 10]}},
                      {"label": "ES m={m} s={s}", "agent": {"name": "es", "m": "{m}"}, "grid": {"m": [2]}}])
    fig = registry.resolve(e, "paper", CAPS)
    agents = {(s["panel"], s["curve"]): s["cell"]["agent"] for s in fig["series"]}
    assert agents["s = 5.42", "ES (m = 10)"] == {"name": "es", "m": 10, "scale": 5.42}
    assert agents["s = 0.5", "ES (m = 1)"] == {"name": "es", "m": 1, "scale": 0.5}
    # a label mixing the curve's and the panel's grid variables is filled from both
    labels = [s["curve"] for s in fig["series"]]
    assert "ES m=2 s=0.5" in labels and "ES m=2 s=5.42" in labels
    assert not any("{" in lab for lab in labels)
    assert set(fig["curves"]) == set(labels)
    assert fig["series"][0]["vars"] == {"s": 0.5, "m": 1}


def test_resolve_grid_values_as_templates_and_exclude():
    e = entry(curves=[{"label": "{reference}-{perturbation}", "agent": {"name": "pp", "reference": "{reference}",
                                                                        "perturbation": "{perturbation}"},
                       "grid": {"reference": ["g", "c"], "perturbation": ["s", "c"],
                                "pair": ["{reference}-{perturbation}"]},
                       "exclude": [{"reference": "c", "perturbation": "c"}, {"pair": "g-s"}]}])
    fig = registry.resolve(e, "paper", CAPS)
    assert fig["curves"] == ["g-c", "c-s"]
    for s in fig["series"]:
        assert s["vars"]["pair"] == f"{s['vars']['reference']}-{s['vars']['perturbation']}" == s["curve"]
    everything = {"reference": "g"}, {"reference": "c"}
    with pytest.raises(RegistryError, match="x-fig.*excluded"):
        registry.resolve(entry(curves=[dict(e["curves"][0], exclude=list(everything))]), "paper", CAPS)


def test_resolve_per_curve_seeds_horizon_and_panel_restriction():
    e = entry(curves=[{"label": "TS", "agent": {"name": "lints"}},
                      {"label": "few", "agent": {"name": "es"}, "seeds": 3, "horizon": 77, "panels": ["d = 3"]}])
    fig = registry.resolve(e, "paper", CAPS)
    got = {(s["panel"], s["curve"]): (s["seeds"], s["cell"]["horizon"]) for s in fig["series"]}
    assert got == {("d = 2", "TS"): (10, 1000), ("d = 3", "TS"): (10, 1000), ("d = 3", "few"): (3, 77)}


def test_resolve_panel_horizon_from_grid():
    e = entry(panels=[{"label": "T = {T}", "env": {"name": "env"}, "horizon": "{T}", "grid": {"T": [100, 200]}}])
    fig = registry.resolve(e, "paper", CAPS)
    assert {s["panel"]: s["cell"]["horizon"] for s in fig["series"]} == {"T = 100": 100, "T = 200": 200}


def test_resolve_timing():
    e = entry(curves=[{"label": "alone", "agent": {"name": "a"}, "timing": "unbatched"},
                      {"label": "batched", "agent": {"name": "a"}}])
    fig = registry.resolve(e, "paper", CAPS)
    cells = {s["curve"]: s["cell"] for s in fig["series"] if s["panel"] == "d = 2"}
    assert cells["alone"]["timing"] == "unbatched" and "timing" not in cells["batched"]
    assert {k: v for k, v in cells["alone"].items() if k != "timing"} == cells["batched"]
    assert registry.cell_key(cells["alone"]) != registry.cell_key(cells["batched"])
    # entry-level timing applies to every curve unless the curve says otherwise
    e2 = dict(e, timing="unbatched")
    e2["curves"] = [e["curves"][0], dict(e["curves"][1], timing="batched")]
    cells = {s["curve"]: s["cell"] for s in registry.resolve(e2, "paper", CAPS)["series"]}
    assert cells["alone"]["timing"] == "unbatched" and "timing" not in cells["batched"]
    cells = {s["curve"]: s["cell"] for s in registry.resolve(dict(e, timing="unbatched"), "paper", CAPS)["series"]}
    assert cells["batched"]["timing"] == "unbatched"


def test_resolve_timing_repeats():
    e = entry(timing="unbatched", timing_repeats=2,
              curves=[{"label": "two", "agent": {"name": "a"}},
                      {"label": "three", "agent": {"name": "a"}, "timing_repeats": 3}])
    cells = {s["curve"]: s["cell"] for s in registry.resolve(e, "paper", CAPS)["series"]}
    assert cells["two"]["timing_repeats"] == 2 and cells["three"]["timing_repeats"] == 3
    assert "timing_repeats" not in registry.resolve(dict(e, timing_repeats=None), "paper", CAPS)["series"][0]["cell"]
    with pytest.raises(registry.RegistryError, match="timing_repeats is for `timing: unbatched` cells only"):
        registry.resolve(dict(e, timing="batched"), "paper", CAPS)


def test_resolve_experiment_cells():
    e = entry(seeds=300, horizon=2000,
              curves=[{"label": "ES", "agent": {"name": "es"}},
                      {"label": "coupled", "experiment": {"name": "coupled_es_phe", "lam": 1.0}, "seeds": 20}])
    fig = registry.resolve(e, "smoke", CAPS)
    s = [s for s in fig["series"] if s["curve"] == "coupled"][0]
    assert s["cell"] == {"experiment": {"name": "coupled_es_phe", "lam": 1.0,
                                        "env": {"name": "env", "d": 2, "n_arms": 10}, "horizon": 300}}
    assert s["seeds"] == 4                      # a curve's own seed count is capped by the scale
    paper = [s for s in registry.resolve(e, "paper", CAPS)["series"] if s["curve"] == "coupled"][0]
    assert paper["seeds"] == 20 and paper["cell"]["experiment"]["horizon"] == 2000


def test_unknown_scale():
    with pytest.raises(RegistryError, match="known scales: smoke, default, paper"):
        registry.resolve(entry(), "huge", CAPS)


# ---------------------------------------------------------------------------------------
# cell keys


def test_cell_key_deterministic_and_order_independent():
    cell = {"env": {"name": "e", "d": 5, "n_arms": 100}, "agent": {"name": "a", "lam": 1.0, "M": 4}, "horizon": 10}
    reordered = {"horizon": 10, "agent": {"M": 4, "lam": 1.0, "name": "a"}, "env": {"n_arms": 100, "d": 5, "name": "e"}}
    key = registry.cell_key(cell)
    assert re.fullmatch(r"[0-9a-f]{12}", key)
    assert key == registry.cell_key(copy.deepcopy(cell)) == registry.cell_key(reordered)
    assert key == registry.cell_key(json.loads(json.dumps(cell)))
    changed = copy.deepcopy(cell)
    changed["agent"]["lam"] = 2.0
    assert registry.cell_key(changed) != key
    assert registry.cell_key(dict(cell, horizon=11)) != key
    assert registry.cell_key(dict(cell, timing="unbatched")) != key


def test_cell_key_stable_across_resolves(fixture_entries):
    a = registry.resolve(fixture_entries["phe-regret"], "default", CAPS)
    b = registry.resolve(copy.deepcopy(fixture_entries["phe-regret"]), "default", CAPS)
    assert [s["key"] for s in a["series"]] == [s["key"] for s in b["series"]]


@pytest.mark.parametrize("scale", registry.SCALES)
def test_a_batched_timing_cell_is_its_figures_cell_and_an_unbatched_one_never(fixture_entries, scale):
    """The same cell in two figures is one key (simulated once); a cell timed one run at a time is
    another cell."""
    by_cell = {json.dumps(s["cell"], sort_keys=True): s["key"]
               for s in registry.resolve(fixture_entries["phe-regret"], scale, CAPS)["series"]}
    timing = registry.resolve(fixture_entries["phe-timing"], scale, CAPS)["series"]
    batched = [s for s in timing if s["cell"].get("timing") != "unbatched"]
    assert len(batched) == 4 and all(by_cell[json.dumps(s["cell"], sort_keys=True)] == s["key"] for s in batched)
    assert not {s["key"] for s in timing if s["cell"].get("timing") == "unbatched"} & set(by_cell.values())


def test_all_cells(fixture_entries):
    figs = [registry.resolve(fixture_entries[fid], "default", CAPS) for fid in ("phe-regret", "phe-timing")]
    cells = registry.all_cells(figs)
    assert len(cells) == len({s["key"] for f in figs for s in f["series"]}) == 6 + 4     # 4 batched cells shared
    for key, cell in cells.items():
        assert registry.cell_key(cell) == key


@pytest.mark.parametrize("fid,label,param,value", [
    ("phe-regret", "LinUCB", "lam", 2.0),                      # a plain curve (2 panels)
    ("phe-regret", "LinPHE (a = {a})", "lam", 1.0e-3),         # a grid curve (2 a x 2 panels)
])
def test_minimal_recompute(fixture_entries, fid, label, param, value):
    entries = fixture_entries
    old = registry.resolve(entries[fid], "default", CAPS)
    edited = copy.deepcopy(entries[fid])
    [i] = [i for i, c in enumerate(edited["curves"]) if c["label"] == label]
    template = edited["curves"][i]
    assert template["agent"][param] != value
    template["agent"][param] = value
    new = registry.resolve(edited, "default", CAPS)
    assert [(s["panel"], s["curve"]) for s in old["series"]] == [(s["panel"], s["curve"]) for s in new["series"]]
    own = {s["curve"] for s in registry.resolve({**entries[fid], "curves": [entries[fid]["curves"][i]]},
                                                "default", CAPS)["series"]}
    changed = {(a["panel"], a["curve"]) for a, b in zip(old["series"], new["series"]) if a["key"] != b["key"]}
    assert changed == {(s["panel"], s["curve"]) for s in old["series"] if s["curve"] in own}
    assert changed
    assert not {s["key"] for s in new["series"] if (s["panel"], s["curve"]) in changed} & {s["key"] for s in old["series"]}
    # the document the figure's jobs read changes with the edit (so they rerun), and carries seeds_per_job
    doc = json.loads(registry.figure_document(new, 7))
    assert doc["seeds_per_job"] == 7 and doc["series"] == json.loads(json.dumps(new["series"]))
    assert registry.figure_document(new, 7) != registry.figure_document(old, 7)


# ---------------------------------------------------------------------------------------
# seed blocks and run files


@pytest.mark.parametrize("n,per_job", [(10, 4), (4, 4), (3, 50), (200, 10), (1, 1), (7, 0)])
def test_seed_blocks(n, per_job):
    blocks = registry.seed_blocks(n, per_job)
    step = max(1, per_job)
    assert [a for a, _ in blocks] == list(range(0, n, step))                   # aligned starts
    assert [b for _, b in blocks] == [min(a + step, n) for a, _ in blocks]
    assert [s for a, b in blocks for s in range(a, b)] == list(range(n))       # cover 0..n-1 once


def test_seed_blocks_shared_between_seed_counts():
    assert registry.seed_blocks(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert registry.seed_blocks(8, 4) == registry.seed_blocks(10, 4)[:2]
    assert registry.seed_blocks(0, 4) == []


def test_figure_runs():
    fig = {"scale": "smoke", "series": [{"key": "aaaaaaaaaaaa", "seeds": 5}, {"key": "bbbbbbbbbbbb", "seeds": 2},
                                        {"key": "aaaaaaaaaaaa", "seeds": 3}]}
    a, b = "aaaaaaaaaaaa", "bbbbbbbbbbbb"
    assert registry.figure_runs(fig, 2) == [paths.run_file("smoke", k, *blk) for k, blk in [
        (a, (0, 2)), (a, (2, 4)), (a, (4, 5)), (b, (0, 2)), (a, (2, 3))]]
    path = paths.run_file("paper", "k", 0, 50)
    assert path.startswith("results/paper/runs/k/seeds-0-50.")
    assert paths.run_key(paths.run_file("smoke", a, 0, 2)) == a


# ---------------------------------------------------------------------------------------
# load_registry errors


def write_registry(tmp_path, files: dict):
    (tmp_path / "figures").mkdir(exist_ok=True)
    for name, content in files.items():
        (tmp_path / "figures" / name).write_text(yaml.safe_dump(content))
    return tmp_path


def good_entry(**kw):
    e = {"title": "t", "caption": "c", "kind": "regret_curves", "seeds": 3, "horizon": 10,
         "panels": [{"label": "p", "env": {"name": "env"}}], "curves": [{"label": "A", "agent": {"name": "a"}}]}
    e.update(kw)
    return e


def test_load_registry_valid(tmp_path):
    cfg = write_registry(tmp_path, {"a.yaml": {"phe-x": good_entry()}, "b.yaml": {"lines-y": good_entry()}})
    reg = registry.load_registry(cfg, SCHEMA)
    assert set(reg) == {"phe-x", "lines-y"}
    assert reg["phe-x"]["id"] == "phe-x" and reg["phe-x"]["paper"] == "phe"


@pytest.mark.parametrize("change,key", [
    ({"kind": "pie"}, "kind"),
    ({"seeds": "many"}, "seeds"),
    ({"curves": [{"label": "A"}]}, "curves/0"),
    ({"curves": [{"label": "A", "agent": {"name": "a"}, "experiment": {"name": "e"}}]}, "curves/0"),
    ({"panels": [{"label": "p"}]}, "panels/0"),
    ({"scales": {"huge": {"seeds": 1}}}, "scales"),
    ({"scales": {"smoke": {"seeds": 0}}}, "scales/smoke/seeds"),
    ({"colour": "red"}, "(entry)"),
])
def test_load_registry_invalid_entry(tmp_path, change, key):
    cfg = write_registry(tmp_path, {"a.yaml": {"phe-ok": good_entry()}, "b.yaml": {"phe-bad": good_entry(**change)}})
    with pytest.raises(RegistryError) as err:
        registry.load_registry(cfg, SCHEMA)
    msg = str(err.value)
    assert "'phe-bad'" in msg and f"key {key}:" in msg and "b.yaml" in msg


def test_load_registry_duplicate_id(tmp_path):
    cfg = write_registry(tmp_path, {"a.yaml": {"phe-x": good_entry()}, "b.yaml": {"phe-x": good_entry()}})
    with pytest.raises(RegistryError, match=r"'phe-x' defined twice.*b\.yaml"):
        registry.load_registry(cfg, SCHEMA)


def test_the_papers_are_listed_once():
    """papers.py is the one list: the registry's prefixes, the report's citations and arXiv ids and the
    schema's enum of ``paper`` are its keys, in its order."""
    from ensemble_bandits import papers

    schema = registry.load_yaml(ROOT / "workflow" / "schemas" / "registry.schema.yaml")
    enum = next(v["enum"] for k, v in _walk(schema) if k == "paper" and isinstance(v, dict) and "enum" in v)
    assert list(registry.PAPERS) == list(report.PAPERS) == list(papers.ARXIV) == list(papers.PAPERS) == enum


def _walk(node):
    """(key, value) of every mapping entry in a nested YAML document."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield k, v
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def test_lines_beta_constant():
    beta = theory.lines_beta(1e4, d=10, lam=1.0, sigma=0.5, S=1.0, delta=0.01)
    assert round(beta, 2) == 5.42


C1 = {"env": {"name": "russo_finite", "d": 5, "n_arms": 3}, "agent": {"name": "lints"}, "horizon": 10}
C2 = {"env": {"name": "russo_finite", "d": 5, "n_arms": 3}, "agent": {"name": "linucb"}, "horizon": 10}
K1, K2 = registry.cell_key(C1), registry.cell_key(C2)
CELLS = {K1: C1, K2: C2}


def run_frame(seeds, ts=(5, 10), offset=0.0):
    return pd.DataFrame([{"seed": s, "t": t, "regret": offset + s + t / 10, "seconds": 0.5}
                         for s in seeds for t in ts])


def fake_figure():
    return {"id": "x-fig", "scale": "smoke", "series": [
        {"panel": "d = 5", "curve": "A", "vars": {"d": 5}, "seeds": 4, "cell": C1, "key": K1},
        {"panel": "d = 5", "curve": "B (M = 2)", "vars": {"d": 5, "M": 2, "ref": "g"}, "seeds": 3, "cell": C2,
         "key": K2},
        {"panel": "d = 7", "curve": "A", "vars": {"d": 7}, "seeds": 2, "cell": C1, "key": K1},
    ]}


def write_run_file(df, path):
    """A run file in the format its name says, with the identity the simulate rule writes."""
    if str(path).endswith(".npz"):
        from ensemble_bandits.cells import identity_of

        a, b = map(int, re.search(r"seeds-(\d+)-(\d+)", str(path)).groups())
        ident = identity_of(CELLS[Path(path).parent.name], range(a, b))
        write_columns_atomic({**{c: df[c].to_numpy() for c in df.columns}, "_identity": ident}, path)
    else:
        write_table_atomic(df, path)


def write_runs(root, per_job=2):
    fig = fake_figure()
    for f in registry.figure_runs(fig, per_job):
        a, b = map(int, re.search(r"seeds-(\d+)-(\d+)", f).groups())
        write_run_file(run_frame(range(a, b), offset=100.0 if K2 in f else 0.0), root / f)
    return fig


def test_figure_table(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fig = write_runs(tmp_path)
    assert sorted(p.name for p in (tmp_path / "results/smoke/runs" / K1).iterdir()) == [
        Path(paths.run_file("smoke", K1, 0, 2)).name, Path(paths.run_file("smoke", K1, 2, 4)).name]
    table = figure_table(fig, 2)
    assert {"panel", "curve", "seed", "t", "regret", "seconds", "d", "M", "ref"} <= set(table.columns)
    assert list(table.columns[:2]) == ["panel", "curve"]
    seeds = table.groupby(["panel", "curve"])["seed"].agg(lambda s: sorted(set(s))).to_dict()
    assert seeds == {("d = 5", "A"): [0, 1, 2, 3], ("d = 5", "B (M = 2)"): [0, 1, 2], ("d = 7", "A"): [0, 1]}
    assert len(table) == (4 + 3 + 2) * 2
    b = table[table["curve"] == "B (M = 2)"]
    assert (b["M"] == 2).all() and (b["ref"] == "g").all() and (b["regret"] >= 100).all()
    assert table[table["curve"] == "A"]["M"].isna().all()
    assert sorted(table["d"].unique()) == [5, 7]
    # the same table from an explicit file list (files may hold more seeds than a series uses)
    files = sorted(str(p) for p in (tmp_path / "results").rglob("seeds-*"))
    pd.testing.assert_frame_equal(figure_table(fig, 2, files=files).sort_values(["panel", "curve", "seed", "t"])
                                  .reset_index(drop=True),
                                  table.sort_values(["panel", "curve", "seed", "t"]).reset_index(drop=True))


def test_figure_table_drops_extra_seeds(tmp_path):
    path = tmp_path / paths.run_file("smoke", K1, 0, 10)
    write_run_file(run_frame(range(10)), path)
    fig = {"scale": "smoke", "series": [{"panel": "", "curve": "A", "vars": {}, "seeds": 3, "cell": C1, "key": K1}]}
    table = figure_table(fig, 10, files=[path])
    assert sorted(table["seed"].unique()) == [0, 1, 2]


def test_figure_table_unreadable_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fig = write_runs(tmp_path)
    name = paths.run_file("smoke", K2, 2, 3)
    bad = tmp_path / name
    data = bad.read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(RuntimeError, match=re.escape(name)):
        figure_table(fig, 2)


def test_final_rows():
    df = pd.DataFrame({"panel": ["p"] * 4 + ["q"] * 2, "curve": ["A", "A", "B", "B", "A", "A"],
                       "seed": 0, "t": [5, 10, 5, 20, 3, 6], "regret": range(6)})
    assert final_rows(df)["regret"].tolist() == [1, 3, 5]


def ensemble_table(panels: dict, T=1000, n_seeds=4, ts_final=100.0):
    """Fig. 2b-like table: per panel (d, n_arms) -> {M: mean final regret of ES++(M)}; TS at ts_final."""
    rows = []
    for (d, n_arms), by_m in panels.items():
        panel = f"d = {d}, |X| = {n_arms}"
        curves = [("TS", None, ts_final)] + [(f"ES++ (M = {m})", m, v) for m, v in by_m.items()]
        for curve, m, final in curves:
            for seed in range(n_seeds):
                jitter = (seed - (n_seeds - 1) / 2) * 0.1          # zero-mean across seeds
                for t in (T // 2, T):
                    rows.append({"panel": panel, "curve": curve, "seed": seed, "t": t,
                                 "regret": (final + jitter) * t / T, "d": d, "n_arms": n_arms,
                                 "M": np.nan if m is None else m})
    return pd.DataFrame(rows)


def test_min_ensemble_size():
    # threshold 0.02 x T = 20: |R(ES++) - R(TS)| <= 20 passes
    panels = {
        (10, 100): {1: 400.0, 2: 150.0, 4: 119.0, 8: 105.0, 16: 100.0},          # monotone: from M = 4
        (20, 100): {1: 110.0, 2: 150.0, 4: 130.0, 8: 85.0, 16: 95.0},            # M = 1 passes by chance
        (20, 1000): {1: 500.0, 2: 400.0, 4: 300.0, 8: 200.0, 16: 121.0},         # nothing passes
        (30, 100): {1: 90.0, 2: 100.0, 4: 100.0, 8: 100.0, 16: 130.0},           # the largest fails
    }
    out = min_ensemble_size(ensemble_table(panels), baseline="TS", threshold=0.02, x="d", group="n_arms", size="M")
    assert list(out["panel"]) == [f"d = {d}, |X| = {k}" for d, k in panels]
    assert list(out["d"]) == [10, 20, 20, 30] and list(out["n_arms"]) == [100, 100, 1000, 100]
    m_min = out["M_min"].tolist()
    assert m_min[:2] == [4.0, 8.0]
    assert math.isnan(m_min[2]) and math.isnan(m_min[3])
    assert (out["M_max_tried"] == 16).all() and (out["T"] == 1000).all()
    assert out["ts_regret"].tolist() == pytest.approx([100.0] * 4)
    # the derived table feeds linear_fit (NaN settings are dropped there)
    status, numbers = claims.linear_fit(out)
    assert status == claims.INCONCLUSIVE and "only 2 finite M_min" in numbers


def test_min_ensemble_size_bootstrap_replicates_are_seed_resamples():
    """Replicate 0 is the plain estimate; replicate r recomputes M_min from the means over the seeds
    of stats.seed_resamples row r (one draw for TS and every M of the panel), checked by a naive loop."""
    panels = {(10, 100): {1: 400.0, 2: 130.0, 4: 119.0, 8: 105.0}, (20, 100): {1: 500.0, 2: 300.0, 4: 200.0, 8: 150.0}}
    table = ensemble_table(panels, n_seeds=6)
    rng = np.random.default_rng(0)
    table["regret"] = table["regret"] + np.where(table["t"] == 1000, rng.normal(0, 15, len(table)), 0.0)
    plain = min_ensemble_size(table, threshold=0.02)
    out = min_ensemble_size(table, threshold=0.02, boot=40, seed=5)
    assert out.equals(min_ensemble_size(table, threshold=0.02, boot=40, seed=5))
    zero = out[out["replicate"] == 0].reset_index(drop=True)
    pd.testing.assert_frame_equal(zero, plain)
    assert sorted(out["replicate"].unique()) == list(range(41))
    fin = final_rows(table)
    for i, (panel, sub) in enumerate(fin.groupby("panel", sort=False)):
        draws = stats.seed_resamples(6, 40, (5, i))
        for r in (1, 17, 40):
            def mean(curve):
                by_seed = sub[sub["curve"] == curve].set_index("seed")["regret"]
                return np.mean([by_seed[s] for s in draws[r]])
            ts = mean("TS")
            ok = [abs(mean(f"ES++ (M = {m})") - ts) / 1000 <= 0.02 for m in (1, 2, 4, 8)]
            expected = next((m for j, m in enumerate((1, 2, 4, 8)) if all(ok[j:])), np.nan)
            row = out[(out["panel"] == panel) & (out["replicate"] == r)].iloc[0]
            assert (np.isnan(expected) and np.isnan(row["M_min"]) and row["censored"]) or row["M_min"] == expected
    assert out["censored"].any() and not out[out["replicate"] == 0]["censored"].iloc[0]


def test_min_ensemble_size_jackknife_rows_leave_one_seed_out():
    """``jackknife`` adds per panel, after its other rows, one row per seed s with replicate -(s + 1):
    M_min from every other seed (checked by a naive loop); the other rows, and their order, are those
    without the option."""
    panels = {(10, 100): {1: 400.0, 2: 130.0, 4: 119.0, 8: 105.0}, (20, 100): {1: 500.0, 2: 300.0, 4: 121.0, 8: 118.0}}
    table = ensemble_table(panels, n_seeds=6)
    rng = np.random.default_rng(1)
    table["regret"] = table["regret"] + np.where(table["t"] == 1000, rng.normal(0, 15, len(table)), 0.0)
    plain = min_ensemble_size(table, threshold=0.02, boot=10, seed=2)
    out = min_ensemble_size(table, threshold=0.02, boot=10, seed=2, jackknife=True)
    pd.testing.assert_frame_equal(out[out["replicate"] >= 0].reset_index(drop=True), plain)
    assert min_ensemble_size(table, threshold=0.02, boot=10, seed=2, jackknife=False).equals(plain)
    assert out["replicate"].tolist() == [*range(11), *range(-1, -7, -1)] * 2       # per panel: point, boot, jackknife
    fin = final_rows(table)
    for panel, sub in fin.groupby("panel", sort=False):
        for s in range(6):
            def mean(curve):
                return sub[(sub["curve"] == curve) & (sub["seed"] != s)]["regret"].mean()
            ts = mean("TS")
            ok = [abs(mean(f"ES++ (M = {m})") - ts) / 1000 <= 0.02 for m in (1, 2, 4, 8)]
            expected = next((m for j, m in enumerate((1, 2, 4, 8)) if all(ok[j:])), np.nan)
            row = out[(out["panel"] == panel) & (out["replicate"] == -(s + 1))].iloc[0]
            assert row["ts_regret"] == pytest.approx(ts)
            assert (np.isnan(expected) and row["censored"]) or row["M_min"] == expected
    # leaving a seed out moves M_min somewhere (a step statistic: most leave-one-out values repeat the point)
    jack = out[out["replicate"] < 0]
    assert jack["M_min"].nunique(dropna=False) > 1


def test_timing_table():
    rows = [{"panel": "p", "curve": c, "seed": s, "t": t, "regret": 1.0, "seconds": sec + s}
            for c, sec in (("fast", 1.0), ("slow", 4.0)) for s in range(3) for t in (50, 100)]
    out = timing_table(pd.DataFrame(rows)).set_index("curve")
    assert out.loc["fast", "runs"] == 3 and out.loc["fast", "rounds"] == 100
    assert out.loc["fast", "seconds_per_run"] == pytest.approx(2.0)
    assert out.loc["slow", "total_seconds"] == pytest.approx(15.0)
    assert out.loc["slow", "us_per_round"] == pytest.approx(1e6 * 5.0 / 100)
    assert out["variates_per_round"].isna().all()                   # run files without the count
    counted = timing_table(pd.DataFrame(rows).assign(variates=lambda df: 300.0 + 100 * df["seed"]))
    assert counted["variates_per_round"].tolist() == pytest.approx([4.0, 4.0])   # mean 400 over 100 rounds


# ---------------------------------------------------------------------------------------
# report


def test_report_markdown(monkeypatch):
    monkeypatch.setattr(report, "provenance", lambda scale: f"Provenance: test, scale `{scale}`.")
    claims_phe = [{"id": "c1", "quote": "A | B", "status": "reproduced", "numbers": "diff -1 [-2, 0]", "note": "n"},
                  {"id": "c2", "quote": "q2", "status": "not reproduced", "numbers": "x", "note": ""}]
    figures = [
        {"id": "phe-fig1", "paper": "phe", "title": "Fig 1", "seeds": 4, "horizon": 300, "choices": "some  choice",
         "claims": claims_phe, "png": "phe-fig1.png"},
        {"id": "epp-tab2", "paper": "epp", "title": "Tab 2", "seeds": None, "horizon": 1, "choices": "",
         "claims": [], "png": "epp-tab2.png"},
        {"id": "epp-fig2a", "paper": "epp", "title": "Fig 2a", "seeds": 3, "horizon": 200, "choices": "",
         "claims": [{"id": "c3", "quote": "q3", "status": "inconclusive", "numbers": "y", "note": ""}]},
    ]
    for f in figures:
        f["run"] = {"commit": "c", "generated": "g", "algorithms": "1"}
    md = report.report_markdown("smoke", figures)
    headings = [line for line in md.splitlines() if line.startswith("## ")]
    assert headings == ["## Summary", "## Contents", f"## phe — {report.PAPERS['phe']}",
                        f"## epp — {report.PAPERS['epp']}"]
    assert md.startswith("# Replication report — scale `smoke`")
    assert "3 claims checked: 1 reproduced, 1 not reproduced, 1 inconclusive." in md
    rows = [line for line in md.splitlines() if re.match(r"\| c\d+: ", line)]
    assert len(rows) == 3
    assert rows[0].startswith("| c1: “A \\| B” *n* | ✅ reproduced |")
    assert "❌ not reproduced" in rows[1] and "❔ inconclusive" in rows[2]
    assert "### epp-tab2 — Tab 2" in md and "No quantitative claim attached." in md
    assert "closed form / static" in md and "4 seeds × 300 rounds" in md
    assert "![phe-fig1](phe-fig1.png)" in md


