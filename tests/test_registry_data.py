"""The live registry (config/figures/*.yaml) as data: it loads and resolves at every scale, its specs
construct, its claims name curves it has, and the figures that share runs share their cells.  The
library's own tests run on the fixture registry (tests/data/registry)."""
import json
import re
from pathlib import Path

import numpy as np
import pytest

from ensemble_bandits import claims, data, registry, report, runner, theory
from ensemble_bandits.cells import cell_datasets, cell_derived_inputs
from ensemble_bandits.claims.core import CHECKS
from ensemble_bandits.claims.evaluate import validate_names
from ensemble_bandits.paper_tables import STATIC_TABLES

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def resolved(entries, config):
    return {(scale, fid): registry.resolve(entry, scale, config["scales"])
            for scale in registry.SCALES for fid, entry in entries.items()}


def keys_by_label(fig):
    return {(s["panel"], s["curve"]): s["key"] for s in fig["series"]}


# ---------------------------------------------------------------------------------------
# substitute


def test_shared_cells_ts_between_fig8b_and_fig8d(resolved):
    b = resolved["default", "epp-fig8b"]
    d = resolved["default", "epp-fig8d"]
    kb, kd = keys_by_label(b), keys_by_label(d)
    panel = "d = 50, |X| = 1000"
    assert kb[panel, "TS"] == kd[panel, "TS"]
    assert kb[panel, "gaussian-sphere (M = 64)"] == kd[panel, "gaussian-sphere (M = 64)"]
    # at default scale, every cell of Fig. 8d is one of Fig. 8b (same runs, simulated once)
    assert set(kd.values()) <= set(kb.values())
    assert len(set(kd.values())) == 19


@pytest.mark.parametrize("scale", registry.SCALES)
def test_shared_cells_linphe_fig1_and_runtime(resolved, scale):
    fig1 = keys_by_label(resolved[scale, "phe-fig1"])
    rt = keys_by_label(resolved[scale, "phe-runtime"])
    for a in (2, 1, 0.5):
        assert fig1["d = 5", f"LinPHE (a = {a})"] == rt["d = 5", f"LinPHE (a = {a}), batched"]
        assert fig1["d = 5", f"LinPHE (a = {a})"] != rt["d = 5", f"LinPHE (a = {a}), one run at a time"]
    # in general: a batched run-time cell equal to a Fig. 1 cell has its key; unbatched ones never do
    by_cell = {json.dumps(s["cell"], sort_keys=True): s["key"] for s in resolved[scale, "phe-fig1"]["series"]}
    shared = 0
    for s in resolved[scale, "phe-runtime"]["series"]:
        same = by_cell.get(json.dumps(s["cell"], sort_keys=True))
        if s["cell"].get("timing") == "unbatched":
            assert s["key"] not in by_cell.values()
        elif same is not None:
            assert same == s["key"]
            shared += 1
    assert shared >= 3


def test_shared_cells_other_examples(resolved):
    paper2a = keys_by_label(resolved["paper", "epp-fig2a"])
    paper8d = keys_by_label(resolved["paper", "epp-fig8d"])
    panel = "d = 50, |X| = 10000"
    for M in (4, 8, 16, 32):
        assert paper2a[panel, f"ES++ (M = {M})"] == paper8d[panel, f"gaussian-sphere (M = {M})"]
        assert paper2a[panel, f"ES (M = {M})"] == paper8d[panel, f"coordinate-sphere (M = {M})"]
    for scale in registry.SCALES:
        assert (keys_by_label(resolved[scale, "epp-fig2a"])[panel, "TS"]
                == keys_by_label(resolved[scale, "epp-fig6"])[panel, "TS"])
    for scale in ("default", "paper"):
        eq = keys_by_label(resolved[scale, "lines-equiv"])["d = 10, K = 100", "generalised LinPHE"]
        ts = keys_by_label(resolved[scale, "lines-gauss-ts"])["d = 10, K = 100", "generalised LinPHE (Gaussian)"]
        assert eq == ts


def test_all_cells(resolved):
    figs = [resolved["default", "epp-fig8b"], resolved["default", "epp-fig8d"]]
    cells = registry.all_cells(figs)
    assert len(cells) == len({s["key"] for f in figs for s in f["series"]}) == 101
    for key, cell in cells.items():
        assert registry.cell_key(cell) == key


def test_config_matches_schema(config):
    import jsonschema

    jsonschema.validate(registry.load_yaml(ROOT / "config" / "config.yaml"),
                        registry.load_yaml(ROOT / "workflow" / "schemas" / "config.schema.yaml"))
    assert set(config["scales"]) <= set(registry.SCALES)


# ---------------------------------------------------------------------------------------
# the real registry


def test_real_registry_loads(entries):
    assert len(entries) >= 20
    assert {e["paper"] for e in entries.values()} == set(report.PAPERS)
    for fid, e in entries.items():
        assert fid.split("-")[0] == e["paper"]


@pytest.mark.parametrize("scale", registry.SCALES)
def test_real_registry_resolves(entries, resolved, scale):
    for fid, e in entries.items():
        fig = resolved[scale, fid]
        if "curves" in e:
            assert fig["series"], (fid, scale)
            assert set(fig["curves"]) == {s["curve"] for s in fig["series"]}
            assert set(fig["panels"]) == {s["panel"] for s in fig["series"]}
            # panel, curve label and grid values name one cell (a label may span a grid, e.g. m)
            ids = {(s["panel"], s["curve"], json.dumps(s["vars"], sort_keys=True)) for s in fig["series"]}
            assert len(ids) == len(fig["series"]), fid
            for s in fig["series"]:
                assert "{" not in s["curve"] and "{" not in s["panel"], (fid, s["curve"])
                assert not re.search(r'"[^"]*\{\w+\}[^"]*"', json.dumps(s["cell"])), (fid, s["cell"])
                assert s["seeds"] >= 1
        else:
            assert "static" in e or e["kind"] == "diagram", fid


def test_real_registry_scale_grids_name_grid_variables(entries):
    for fid, e in entries.items():
        names = {v for item in e.get("panels", []) + e.get("curves", []) for v in item.get("grid", {})}
        for scale, over in (e.get("scales") or {}).items():
            unknown = set((over or {}).get("grid", {})) - names
            assert not unknown, f"{fid}: scale {scale} overrides unknown grid variable(s) {unknown}"


def test_real_registry_static_and_notebooks(entries):
    for fid, e in entries.items():
        if "static" in e:
            assert e["static"]["name"] in STATIC_TABLES, fid
        if "derive" in e:
            from ensemble_bandits.aggregate import DERIVED

            assert e["derive"]["name"] in DERIVED, fid
        assert (ROOT / "notebooks" / f"{e['kind']}.ipynb").exists(), (fid, e["kind"])


def tiny_env(env):
    env = dict(env)
    if "n_arms" in env:
        env["n_arms"] = min(env["n_arms"], 20)
    if "d" in env:
        env["d"] = min(env["d"], 5)
    return env


def fake_text_features(tmp_path_factory):
    """A features file of the hate-speech corpus with random stand-ins (the real one is made by rule
    embed_text, minutes of encoding): the environment checks its corpus checksum and row count only."""
    from ensemble_bandits import text

    c = text.load_corpus(ROOT / "resources" / "data")
    d = tmp_path_factory.mktemp("emb")
    with open(text.embedding_file(d, c.sha256), "wb") as fh:
        np.savez(fh, features=np.zeros((len(c.text), text.encoder("minilm").dim), np.float32), sha256=c.sha256)
    return d


def test_real_registry_specs_construct(entries, resolved, tmp_path_factory):
    envs, agents, experiments = {}, {}, {}
    for fid in entries:
        for s in resolved["paper", fid]["series"]:
            cell = s["cell"]
            if "experiment" in cell:
                exp = dict(cell["experiment"], env=tiny_env(cell["experiment"]["env"]), horizon=5)
                experiments[json.dumps(exp, sort_keys=True)] = exp
                continue
            env = tiny_env(cell["env"])
            envs[json.dumps(env, sort_keys=True)] = env
            agents[json.dumps([env, cell["agent"]], sort_keys=True)] = (env, cell["agent"], fid)
    assert envs and agents and experiments
    data_dir = str(ROOT / "resources" / "data")      # environments that read datasets get the shipped ones
    built = {}
    for key, env in envs.items():
        if any(not data.present(n, data_dir) for n in cell_datasets({"env": env})):
            continue                                 # an optional dataset (Covertype) not fetched here
        if cell_derived_inputs({"env": env}):  # the text features (rule embed_text): stand-ins
            env = dict(env, cache_dir=str(fake_text_features(tmp_path_factory)))
        built[key] = runner.make_env(env, [0], data_dir)
    for env, agent, fid in agents.values():
        key = json.dumps(env, sort_keys=True)
        if key not in built:
            continue
        try:
            runner.make_agent(agent, built[key], [0], 5)
        except Exception as err:  # noqa: BLE001 - name the offending spec
            pytest.fail(f"{fid}: agent {agent} on {env}: {err}")
    for exp in experiments.values():
        df = runner.simulate({"experiment": exp}, [0])
        assert len(df) == 1 and int(df["t"].iloc[0]) == 5


def test_real_registry_claims_name_paper_scale_curves(entries, resolved):
    for fid, e in entries.items():
        fig = resolved["paper", fid]
        claims.validate_names(e, fig["curves"] + list(fig.get("pending_curves", {})), fig["panels"])


def test_lines_registry_uses_beta_constant(entries):
    beta = round(theory.lines_beta(1e4, d=10, lam=1.0, sigma=0.5, S=1.0, delta=0.01), 2)
    msweep = entries["lines-msweep"]
    assert [p["grid"]["s"] for p in msweep["panels"]] == [[0.5], [beta]]
    opt = entries["lines-optfrac"]["curves"][0]["agent"]
    assert opt["scale"] == opt["beta"] == beta


# ---------------------------------------------------------------------------------------
# figure_table, min_ensemble_size, timing_table


def test_shared_cells_epp_neural(resolved):
    """The Ensemble++ (M = 8) runs on the quadratic bandit are one cell across Figs. 1, 3a, 9a and the
    three ablations; the neural-bandit runs across Figs. 3b, 9a and 10 -- at every scale."""
    quad, neural = "Quadratic, d = 100, |X| = 1000", "Neural, d = 100, |X| = 1000"
    for scale in registry.SCALES:
        k = {fid: keys_by_label(resolved[scale, fid]) for fid in
             ("epp-fig1", "epp-fig3a", "epp-fig3b", "epp-fig9a", "epp-fig10", "epp-fig12a", "epp-fig12b", "epp-fig12c")}
        epp = k["epp-fig3a"][quad, "Ensemble++"]
        assert epp == k["epp-fig1"][quad, "Ensemble++ (M = 8)"] == k["epp-fig9a"]["Quadratic", "Ensemble++"]
        assert epp == k["epp-fig12a"][quad, "coordinate update"] == k["epp-fig12b"][quad, "sphere reference"]
        assert epp == k["epp-fig12c"][quad, "sphere perturbation"]
        for method in ("Ensemble+", "EpiNet"):
            assert k["epp-fig3a"][quad, method] == k["epp-fig1"][quad, f"{method} (M = 8)"]
            assert k["epp-fig3b"][neural, method] == k["epp-fig10"][neural, f"{method} (M = 8)"] \
                == k["epp-fig9a"]["Neural", method]


def test_limits_anchors_aliases_and_merge_keys_of_the_real_registry_still_load(entries):
    assert "<<:" in (ROOT / "config" / "figures" / "epp.yaml").read_text()
    assert entries["epp-fig9a"]["kind"]


def test_values_every_claim_of_the_real_registry_passes_the_argument_checks(entries, config):
    for fid, entry in entries.items():
        fig = registry.resolve(entry, "paper", config["scales"])
        validate_names(entry, fig["curves"] + list(fig.get("pending_curves", {})), fig["panels"])


def test_values_every_number_argument_of_the_registry_has_a_kind(entries):
    """A number a registry claim gives to a check is typed and ranged (claims/argspec.py), so a new
    check's argument cannot be left to finiteness alone."""
    from ensemble_bandits.claims.argspec import _kind_of

    untyped = set()
    for entry in entries.values():
        for claim_ in entry.get("claims", []):
            for chk in claim_["checks"]:
                for name, value in (chk.get("args") or {}).items():
                    if chk["fn"] in CHECKS and isinstance(value, (int, float)) and not isinstance(value, bool) \
                            and _kind_of(chk["fn"], name) is None:
                        untyped.add((chk["fn"], name))
    assert not untyped, f"give these arguments a kind in claims/argspec.py KINDS: {sorted(untyped)}"
