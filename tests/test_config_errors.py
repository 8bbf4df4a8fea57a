"""Typos must not cost hours: a mistyped config key, skip pattern or target, a key given twice in a
YAML file, and an unexpectedly expensive run are each reported before anything runs.

The unit tests check the library (registry.load_yaml, check_config, match_ids, the cost model,
cli estimate); the tests marked ``workflow`` run ``snakemake -n`` (dry runs only, a few seconds
each) in a scratch copy of the project and check the message the user sees.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from ensemble_bandits import cells, cli, costs, registry, validation
from ensemble_bandits.agents import glm_fit
from ensemble_bandits.registry import RegistryError
from helpers import copy_project, timeout_s

ROOT = Path(__file__).resolve().parents[1]
CONFIG_SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
REGISTRY_SCHEMA = ROOT / "workflow" / "schemas" / "registry.schema.yaml"
FIXTURE = ["--config-dir", str(ROOT / "tests" / "data" / "registry"), "--schema", str(REGISTRY_SCHEMA)]
KNOWN_KEYS = "known keys: archives, data_dir, data_fetch, device, gpu, look, reuse_records, scale, scales, seeds_per_job, shared_pass_group, skip, torch_threads"


def resolved(entries, config, scale, ids=None):
    return [registry.resolve(entries[i], scale, config["scales"]) for i in (ids or sorted(entries))]


# ---------------------------------------------------------------------------------------
# duplicate keys in YAML


def test_duplicate_key_names_the_file_and_both_lines(tmp_path):
    path = tmp_path / "lines.yaml"
    path.write_text("lines-x:\n  title: t\n  seeds: 30\n  horizon: 10\n  seeds: 300\n")
    with pytest.raises(RegistryError) as err:
        registry.load_yaml(path)
    assert str(err.value) == f"{path}, line 5: duplicate key 'seeds' (first at line 3)"


def test_duplicate_figure_id_in_one_registry_file(tmp_path):
    figures = tmp_path / "config" / "figures"
    figures.mkdir(parents=True)
    entry = "  title: t\n  caption: c\n  kind: table\n  static: {name: x}\n"
    (figures / "phe.yaml").write_text(f"phe-a:\n{entry}\nphe-b:\n{entry}\nphe-a:\n{entry}")
    with pytest.raises(RegistryError, match=r"phe\.yaml, line 13: duplicate key 'phe-a' \(first at line 1\)"):
        registry.load_registry(tmp_path / "config", REGISTRY_SCHEMA)


def test_merge_keys_and_equal_values_in_different_mappings_are_fine(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("base: &b {seeds: 1, horizon: 2}\na:\n  <<: *b\n  seeds: 3\nb: {seeds: 3}\n")
    assert registry.load_yaml(path) == {"base": {"seeds": 1, "horizon": 2}, "a": {"seeds": 3, "horizon": 2},
                                        "b": {"seeds": 3}}


def test_invalid_yaml_names_the_file(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("a: [1, 2\n")
    with pytest.raises(RegistryError, match=r"(?s)bad\.yaml: not valid YAML: .*line 1, column 4"):
        registry.load_yaml(path)


def test_every_yaml_file_of_the_project_parses_strictly():
    files = [*ROOT.glob("config/**/*.yaml"), *ROOT.glob("workflow/**/*.yaml")]
    assert len(files) >= 6
    for path in files:
        registry.load_yaml(path)


def test_check_config_reads_every_config_file_strictly(tmp_path, config):
    extra = tmp_path / "extra.yaml"
    extra.write_text("scale: smoke\nseeds_per_job: 2\nscale: paper\n")
    with pytest.raises(RegistryError, match=r"extra\.yaml, line 3: duplicate key 'scale' \(first at line 1\)"):
        validation.check_config(config, [ROOT / "config" / "config.yaml", extra], CONFIG_SCHEMA)


# ---------------------------------------------------------------------------------------
# unknown config keys, skip patterns


def test_unknown_config_key_names_the_key_and_the_known_keys(config):
    with pytest.raises(RegistryError) as err:
        validation.check_config({**config, "scal": "smoke"}, [], CONFIG_SCHEMA)
    assert str(err.value) == f"unknown config key(s) ['scal'] (did you mean 'scale'?); {KNOWN_KEYS}"
    with pytest.raises(RegistryError, match=r"\['skips', 'zzz'\] \(did you mean 'skip' for 'skips'\?\); known"):
        validation.check_config({**config, "skips": ["epp-fig8*"], "zzz": 1}, [], CONFIG_SCHEMA)


def test_project_config_has_only_known_keys(config):
    validation.check_config(registry.load_yaml(ROOT / "config" / "config.yaml"), [ROOT / "config" / "config.yaml"],
                          CONFIG_SCHEMA)


def test_config_schema_rejects_unknown_keys():
    cfg = registry.load_yaml(ROOT / "config" / "config.yaml")
    schema = registry.load_yaml(CONFIG_SCHEMA)
    jsonschema.validate(cfg, schema)
    with pytest.raises(jsonschema.ValidationError, match="'scal' was unexpected"):
        jsonschema.validate({**cfg, "scal": "smoke"}, schema)


@pytest.mark.parametrize("look, ok", [(2, True), ({"large-m-marginal": "1"}, True), ({"posterior": 4}, True),
                                      (0, False), ({}, False), ({"posterior": "0"}, False), ({"posterior": "x"}, False),
                                      ("2", False)])
def test_config_schema_takes_a_look_or_one_look_per_fresh_study(look, ok):
    """``look=k`` and ``look='{claim: k}'`` (docs/sequential.md: the look of one fresh study) both pass the
    schema, as Snakemake's --config gives them; a look below 1 or not a number does not."""
    cfg, schema = registry.load_yaml(ROOT / "config" / "config.yaml"), registry.load_yaml(CONFIG_SCHEMA)
    if ok:
        jsonschema.validate({**cfg, "look": look}, schema)
    else:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**cfg, "look": look}, schema)


def test_skip_pattern_matching_no_id_is_an_error():
    ids = ["glmes-x1", "phe-a1", "phe-a2", "phe-b", "phe-regret"]
    assert registry.match_ids(["phe-a*", "phe-regret"], ids) == ["phe-a1", "phe-a2", "phe-regret"]
    assert registry.match_ids([], ids) == []
    with pytest.raises(RegistryError) as err:
        registry.match_ids(["phe-a*", "phe-a99*"], ids, "skip pattern")
    assert str(err.value) == f"skip pattern 'phe-a99*' matches no figure id; known ids: {', '.join(ids)}"


# ---------------------------------------------------------------------------------------
# cost model and estimate


def test_cell_cost_grows_with_seeds_rounds_arms_and_members():
    cell = {"env": {"name": "russo_finite", "d": 10, "n_arms": 100},
            "agent": {"name": "ensemble_pp", "M": 8}, "horizon": 1000}
    base = costs.cell_cost_seconds(cell, 50)
    assert base > 0
    assert costs.cell_cost_seconds(cell, 100) > base
    assert costs.cell_cost_seconds({**cell, "horizon": 2000}, 50) == pytest.approx(2 * base)
    assert costs.cell_cost_seconds({**cell, "env": {**cell["env"], "n_arms": 10000}}, 50) > 5 * base
    assert costs.cell_cost_seconds({**cell, "agent": {"name": "ensemble_pp", "M": 256}}, 50) > base
    assert costs.cell_cost_seconds({**cell, "timing": "unbatched"}, 50) > 5 * base
    es_t = {"env": cell["env"], "agent": {"name": "ensemble_sampling", "m": "T"}, "horizon": 1000}
    assert costs.cell_cost_seconds(es_t, 50) > costs.cell_cost_seconds(
        {**es_t, "agent": {"name": "ensemble_sampling", "m": 10}}, 50)
    exp = {"experiment": {"name": "coupled_es_phe", "env": cell["env"], "horizon": 1000}}
    assert costs.cell_cost_seconds(exp, 50) > costs.cell_cost_seconds(es_t, 50)


# CPU seconds measured at paper scale on a 2-core machine (docs/performance.md), seeds_per_job=50;
# phe-runtime was measured with one run per seed (its timing cells now run each seed 5 times) and on
# its d = 5 panel only (MEASURED_PANELS: the panels the measurement covers).
# phe-fig2 (GLM agents, their classes' own cost models): `snakemake --cores 1` while other jobs shared
# the machine (the `timings` command).  glmes-fig1b: the whole figure with its `once` reading's cells,
# 3,230 s of job time on 2 cores (`timings`), the run that showed the GLM model 3x low (GD_RUN_FACTOR).
MEASURED = {"phe-fig1": 73, "phe-runtime": 310 * 5, "lines-msweep": 624, "lines-equiv": 125, "lines-tscale": 51,
            "epp-fig2a": 832, "epp-fig6": 599, "phe-fig2": 599, "glmes-fig1b": 3230}
MEASURED_PANELS = {"phe-runtime": ["d = 5"]}


@pytest.mark.parametrize("fid", sorted(MEASURED))
def test_cost_model_is_calibrated_on_measured_figures(entries, config, fid):
    """The live registry as data: the cost model's estimate of each measured live figure (MEASURED) is
    within a factor of 3 of its measured CPU time."""
    fig = resolved(entries, config, "paper", [fid])[0]
    if fid in MEASURED_PANELS:
        fig = {**fig, "series": [s for s in fig["series"] if s["panel"] in MEASURED_PANELS[fid]]}
    est = costs.cost_summary(costs.run_costs([fig], 50))["seconds"]
    assert MEASURED[fid] / 3 < est < 3 * MEASURED[fid], (fid, est)


# Microseconds per seed and round of the GLM agents (each class's own cost model, round_costs),
# measured on the same machine, one core, while other jobs kept both cores busy (load 4-5): the
# minimum of 3 runs of (B seeds, T rounds), imports and caches warmed first; B = 1 is a timing cell
# (one seed alone).  The GLM figures cost hours at paper scale, so their calibration is per round.
_E20 = {"name": "sphere_logistic", "d": 20, "n_arms": 50, "noise_sd": 0.5}
_E50 = {"name": "sphere_logistic", "d": 50, "n_arms": 500, "noise_sd": 0.5}
_ES = {"name": "glm_es", "m": 10, "lam": 1, "scale": 0.1}
_DT = {"name": "glm_es_anytime", "T0": 100, "b": 2.618033988749895}
_UCB = {"name": "ucb_glm", "alpha": 1.0, "lam": 1.0, "penalty": "half", "solver": "sum_safe", "warmup": 500}
_TSL, _FPL = {"name": "glm_tsl", "a": 1.0, "lam": 1.0}, {"name": "glm_fpl", "scale": 0.1, "lam": 1.0}


def _phe(d):
    return {"name": "phe_logistic", "d": d, "n_arms": 100, "basis": "random"}


GLM_MEASURED_US = [  # (env, agent, seeds B, rounds T, microseconds per seed and round)
    (_phe(5), {"name": "logphe", "a": 1}, 100, 1000, 17.8), (_phe(5), {"name": "logts"}, 100, 1000, 16.6),
    (_phe(5), {"name": "glm_ucb"}, 100, 1000, 17.3), (_phe(5), {"name": "ucb_glm"}, 100, 1000, 14.5),
    (_phe(5), {"name": "log_egreedy"}, 100, 1000, 12.7),
    (_phe(10), {"name": "logphe", "a": 1}, 100, 1000, 25.0), (_phe(10), {"name": "logts"}, 100, 1000, 25.5),
    (_phe(10), {"name": "glm_ucb"}, 100, 1000, 27.4), (_phe(10), {"name": "ucb_glm"}, 100, 1000, 22.4),
    (_phe(10), {"name": "log_egreedy"}, 100, 1000, 18.6),
    (_phe(20), {"name": "logphe", "a": 1}, 100, 1000, 50.4), (_phe(20), {"name": "logts"}, 100, 1000, 50.8),
    (_phe(20), {"name": "glm_ucb"}, 100, 1000, 50.0), (_phe(20), {"name": "ucb_glm"}, 100, 1000, 46.0),
    (_phe(20), {"name": "log_egreedy"}, 100, 1000, 42.3),
    (_E20, _ES, 50, 1000, 285.2), (_E20, _DT, 50, 1000, 336.7), (_E20, _UCB, 50, 1000, 94.3),
    (_E20, _TSL, 50, 1000, 113.6), (_E20, _FPL, 50, 1000, 99.1),
    (_E50, _ES, 10, 200, 3961.8), (_E50, _UCB, 10, 200, 1232.4), (_E50, _TSL, 10, 200, 1364.0),
    (_E50, _FPL, 10, 200, 1195.7),
    (_E20, _ES, 1, 2000, 1167.0), (_E20, _DT, 1, 2000, 1179.9), (_E20, _UCB, 1, 2000, 817.2),
    (_E20, _TSL, 1, 2000, 810.6), (_E20, _FPL, 1, 2000, 721.4),
]


# Whole paper-scale jobs (`cli timings --cells`, CPU seconds of the job's process): glmes-fig1c's timing
# cells (5 seeds x 5 runs x 10^4 rounds each, alone on an idle machine) and two 10-seed blocks of
# glmes-fig4a's doubling-trick cells (d = 50, K = 500, 10^4 rounds, two jobs at once).  Scaled by
# GD_RUN_FACTOR, the model is within 1.25x of each.
_DT300 = {**_DT, "T0": 300}
GLM_MEASURED_JOBS = [  # (env, agent, timing, seeds, CPU seconds)
    (_E20, _ES, "unbatched", 5, 582.7), (_E20, _DT, "unbatched", 5, 708.2), (_E20, _DT300, "unbatched", 5, 687.4),
    (_E20, _UCB, "unbatched", 5, 398.1), (_E20, _TSL, "unbatched", 5, 381.5), (_E20, _FPL, "unbatched", 5, 377.2),
    (_E50, {**_DT, "dt_warmup": "once"}, None, 10, 1578.0), (_E50, {**_DT300, "dt_warmup": "once"}, None, 10, 1571.6),
]


@pytest.mark.parametrize("env,agent,timing,B,cpu_s", GLM_MEASURED_JOBS,
                         ids=[f"{a['name']}-d{e['d']}-B{b}" for e, a, _, b, _ in GLM_MEASURED_JOBS])
def test_glm_cost_model_is_calibrated_on_whole_paper_jobs(env, agent, timing, B, cpu_s):
    cell = {"env": env, "agent": agent, "horizon": 10_000, **({"timing": timing} if timing else {})}
    model = costs.cell_cost_seconds(cell, B)
    assert cpu_s / 1.25 < model < 1.25 * cpu_s, (agent["name"], model, cpu_s)


@pytest.mark.parametrize("env,agent,B,T,us", GLM_MEASURED_US,
                         ids=[f"{a['name']}-d{e['d']}-B{b}" for e, a, b, _, _ in GLM_MEASURED_US])
def test_glm_cost_model_is_calibrated_on_measured_rounds(env, agent, B, T, us, monkeypatch):
    """Each GLM class's round_costs, before the whole-run factor, within a factor 2 of its measured
    cost per seed and round on these short runs (a timing cell, B = 1, runs each seed TIMING_REPEATS
    times: the model counts them)."""
    monkeypatch.setattr(glm_fit, "GD_RUN_FACTOR", 1.0)
    cell = {"env": env, "agent": agent, "horizon": T}
    if B == 1:
        cell["timing"] = "unbatched"
    runs = cells.cell_dimensions(cell)["runs"]
    model_us = 1e6 * costs.cell_cost_seconds(cell, B) / (B * T * runs)
    assert us / 2 < model_us < 2 * us, (agent["name"], model_us, us)


# Milliseconds per round of a batch of B seeds of the glmes neural agents (neural_es.round_costs),
# measured on the same machine, torch on one CPU thread, batched in fixed blocks of 10 seeds (the
# default since revision 1), while two paper simulations kept both cores busy (2026-11-29):
# runner.simulate of (B seeds, T rounds) on the quadratic bandit, d = 20, K = 50 (T = 150; N = 50 at
# T = 100) and d = 50, K = 500 (T = 10, construction included).
_Q20 = {"name": "glmes_quadratic", "d": 20, "n_arms": 50, "noise_sd": 0.5}
_Q50 = {"name": "glmes_quadratic", "d": 50, "n_arms": 500, "noise_sd": 0.5}
_NES = {"name": "neural_es", "m": 10, "lam": 1, "scale": 0.1, "L": 3, "N": 20}
_NTS, _NUCB = {"name": "neural_ts", "nu": 1.0, "lam": 1.0}, {"name": "neural_ucb", "gamma": 1.0, "lam": 1.0}
_NPHE = {"name": "neural_phe", "scale": 0.1, "lam": 1.0}
NEURAL_MEASURED_MS = [  # (env, agent, seeds B, rounds T, milliseconds per round of the batch)
    (_Q20, _NES, 10, 150, 170.9), (_Q20, _NES, 20, 150, 326.3),
    (_Q20, {"name": "neural_es_anytime", "T0": 100, "b": 2.618033988749895}, 10, 150, 119.4),
    (_Q20, {**_NES, "N": 50}, 10, 100, 602.5),
    (_Q20, _NTS, 10, 150, 131.2), (_Q20, _NUCB, 10, 150, 86.3), (_Q20, _NPHE, 10, 150, 26.8),
    (_Q50, _NES, 10, 10, 2221.0), (_Q50, _NTS, 10, 10, 876.2), (_Q50, _NUCB, 10, 10, 691.2),
    (_Q50, _NPHE, 10, 10, 116.7),
]


@pytest.mark.parametrize("env,agent,B,T,ms", NEURAL_MEASURED_MS,
                         ids=[f"{a['name']}-d{e['d']}-B{b}-{i}" for i, (e, a, b, _, _) in enumerate(NEURAL_MEASURED_MS)])
def test_neural_cost_model_is_calibrated_on_measured_rounds(env, agent, B, T, ms):
    """Each glmes neural class's round_costs within a factor 2 of its measured cost per round."""
    model_ms = 1e3 * costs.cell_cost_seconds({"env": env, "agent": agent, "horizon": T}, B) / T
    assert ms / 2 < model_ms < 2 * ms, (agent["name"], model_ms, ms)


def test_linear_agents_keep_the_default_cost_model():
    """Agent classes without a cost model of their own (the linear family) get exactly the default,
    linear Ensemble++ with its distribution pair's member weight."""
    from ensemble_bandits.agents.linear import EnsemblePlusPlus
    ts = {"env": {"name": "russo_finite", "d": 10, "n_arms": 100}, "agent": {"name": "lints"}, "horizon": 1000}
    assert costs.round_costs(ts, cells.cell_dimensions(ts)) == costs.default_round_costs(cells.cell_dimensions(ts))
    cell = {"env": {"name": "russo_finite", "d": 10, "n_arms": 100}, "agent": {"name": "ensemble_pp", "M": 8},
            "horizon": 1000}
    dims = cells.cell_dimensions(cell)
    w = EnsemblePlusPlus.member_weight(cell["agent"])            # the defaults: Gaussian x Sphere
    assert w == EnsemblePlusPlus.MEMBER_SHARE_REFERENCE["gaussian"] + EnsemblePlusPlus.MEMBER_SHARE_PERTURBATION["sphere"]
    assert costs.round_costs(cell, dims) == costs.default_round_costs(dims, member_weight=w)
    assert costs.cell_cost_seconds(cell, 50) == pytest.approx(1000 * (costs.COST_ROUND_S + 50 * (
        costs.COST_SEED_ROUND_S + costs.COST_ARM_S * 10 * 100 + w * costs.COST_MEMBER_S * 8 * 10)))
    coord = dict(cell, agent={"name": "ensemble_pp", "M": 8, "reference": "coordinate", "perturbation": "coordinate"})
    assert EnsemblePlusPlus.member_weight(coord["agent"]) < w / 4   # one column of P per side
    glm = {"env": _E20, "agent": _ES, "horizon": 1000}
    assert costs.round_costs(glm, cells.cell_dimensions(glm)) != costs.default_round_costs(cells.cell_dimensions(glm))


def test_cost_notice_only_above_one_cpu_hour(entries, config):
    """The live registry as data: its runs' estimated costs at each scale give a notice only above one
    CPU-hour (smoke never; paper's whole run of thousands of jobs, naming them)."""
    assert costs.cost_notice(resolved(entries, config, "smoke"), 50) is None
    # default `all` is estimated above an hour since the UCI figures (about 1.5 h; it measures more than
    # 2 CPU-hours), so its notice is printed: it must name that scale
    notice = costs.cost_notice(resolved(entries, config, "default"), 50)
    assert notice is None or "scale default" in notice
    cheap = [i for i in entries if i.startswith(("phe-fig", "lines-"))]      # under an hour at paper scale
    assert costs.cost_notice(resolved(entries, config, "paper", cheap), 50) is None
    figs = resolved(entries, config, "paper")
    total = costs.cost_summary(costs.run_costs(figs, 50))
    assert total["seconds"] > 10 * 3600 and total["jobs"] > 10000         # at the time of writing: 13,102 jobs, 3,327 cells
    notice = costs.cost_notice(figs, 50)
    assert notice.startswith("Estimated cost of this run: about ")
    assert (f" h of CPU time in {total['jobs']:,} simulation jobs ({total['cells']:,} cells; scale paper, "
            f"seeds_per_job=50; run files already present and cells of committed archives not counted)") in notice
    assert "estimate from a cost model" in notice and "ensemble-bandits estimate --scale paper" in notice
    # run files already present are not counted
    assert costs.cost_notice(resolved(entries, config, "paper"), 50, exists=lambda path: True) is None


def test_cli_estimate_prints_cells_jobs_and_cpu_time(capsys, monkeypatch, fixture_entries, config):
    """On the fixture registry: phe-timing's batched cells are phe-regret's LinPHE cells, counted once
    in the total."""
    monkeypatch.chdir(ROOT)
    one = costs.cost_summary(costs.run_costs(resolved(fixture_entries, config, "paper", ["phe-regret"]), 2))
    total = costs.cost_summary(costs.run_costs(resolved(fixture_entries, config, "paper", ["phe-regret", "phe-timing"]), 2))
    cli.main(["estimate", "phe-*", "--scale", "paper", "--seeds-per-job", "2", *FIXTURE])
    out = capsys.readouterr().out
    assert "an estimate from a cost model" in out and "nothing is run" in out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[2:] if not line.startswith("to run here")}
    assert list(rows) == ["phe-regret", "phe-timing", "total"]
    assert rows["phe-regret"][:2] == ["6", "18"] == [f"{one['cells']:,}", f"{one['jobs']:,}"]   # 6 cells x 6 seeds / 2
    assert rows["total"][:2] == [f"{total['cells']:,}", f"{total['jobs']:,}"] == ["10", "30"]   # 4 shared cells once
    assert " ".join(rows["total"][2:4]) == costs.format_cpu_time(total["seconds"])
    assert "(cells shared by figures counted once)" in out
    with pytest.raises(SystemExit, match=re.escape(f"estimate: id or pattern 'phe-fig99' matches no figure id; known "
                                                   f"ids: {', '.join(sorted(fixture_entries))}") + "$"):
        cli.main(["estimate", "phe-fig99", "--scale", "paper", *FIXTURE])


def test_cli_estimate_pending_lists_the_cells_of_pending_readings(capsys, monkeypatch, fixture_entries, config):
    """The fixture registry's phe-regret has a pending reading on its LinPHE curves; phe-timing has none."""
    monkeypatch.chdir(ROOT)
    [fig] = resolved(fixture_entries, config, "paper", ["phe-regret"])
    waiting = fig["pending_series"]
    assert len(waiting) == 4                 # 2 values of a x 2 panels
    cli.main(["estimate", "phe-regret", "--pending", "--scale", "paper", "--seeds-per-job", "5", *FIXTURE])
    out = capsys.readouterr().out
    for s in waiting:                       # each cell by key, with its run files in blocks of 5 seeds
        assert f" {s['reading']} " in out and f" {s['key']} " in out and s["curve"] in out
        assert f"results/paper/runs/{s['key']}/seeds-0-5.npz" in out
    cli.main(["estimate", "phe-timing", "--pending", "--scale", "paper", *FIXTURE])
    assert capsys.readouterr().out.strip() == "no pending reading among these figures at scale paper"


# ---------------------------------------------------------------------------------------
# through Snakemake (dry runs)


def _dry_run(cwd, *args):
    res = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", *args], cwd=cwd,
                         capture_output=True, text=True, timeout=timeout_s(300))
    res.output = res.stdout + res.stderr
    return res


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return copy_project(tmp_path_factory.mktemp("config-errors"))


def _add_line_after(path: Path, anchor: str, line: str):
    text = path.read_text()
    assert text.count(anchor) == 1, anchor
    path.write_text(text.replace(anchor, anchor + line, 1))


# (case, how to make the typo: a file edit (path, anchor, added line, whether the added line is the
# first or the second occurrence) or None, snakemake arguments, message)
TYPOS = [
    ("unknown config key", None, ["all", "--config", "scal=smoke"],
     f"unknown config key(s) ['scal'] (did you mean 'scale'?); {KNOWN_KEYS}"),
    ("misspelt skip", None, ["all", "--config", "scale=smoke", "skips=[epp-fig8*]"],
     f"unknown config key(s) ['skips'] (did you mean 'skip'?); {KNOWN_KEYS}"),
    ("skip pattern matching nothing", None, ["all", "--config", "scale=smoke", "skip=[epp-fig99*]"],
     "skip pattern 'epp-fig99*' matches no figure id; known ids: epp-fig1, "),
    ("unknown bare target", None, ["phe-fig99"],
     "unknown target 'phe-fig99': a target is a figure id (e.g. snakemake phe-fig1, built at the configured scale), "
     "a paper (phe, lines, glmes, epp), all, or a file such as figures/<scale>/<id>.pdf; known ids: epp-fig1, "),
    ("duplicate key in the registry", ("config/figures/lines.yaml", "\nlines-gauss-ts:\n", "  seeds: 7\n", "first"),
     ["lines-gauss-ts", "--config", "scale=smoke"],
     "invalid figure registry: config/figures/lines.yaml, line {line}: duplicate key 'seeds' (first at line {first})"),
    ("duplicate key in config.yaml", ("config/config.yaml", "seeds_per_job: 50\n", "seeds_per_job: 5\n", "second"),
     ["phe-tab1"], "config/config.yaml, line {line}: duplicate key 'seeds_per_job' (first at line {first})"),
]


@pytest.mark.workflow
@pytest.mark.parametrize("case,edit,args,message", TYPOS, ids=[t[0] for t in TYPOS])
def test_typo_fails_the_dry_run_with_a_clear_message(project, case, edit, args, message):
    saved = None
    if edit:
        path = project / edit[0]
        saved = path.read_text()
        _add_line_after(path, edit[1], edit[2])
        added = saved[:saved.index(edit[1]) + len(edit[1])].count("\n") + 1       # its line number
        key = edit[2].split(":")[0] + ":"
        lines = path.read_text().splitlines()
        if edit[3] == "first":        # the entry's own line, further down, is the duplicate
            other = next(n for n in range(added + 1, len(lines) + 1) if lines[n - 1].startswith(key))
            message = message.format(line=other, first=added)
        else:
            other = max(n for n in range(1, added) if lines[n - 1].startswith(key))
            message = message.format(line=added, first=other)
    try:
        res = _dry_run(project, *args)
    finally:
        if saved is not None:
            path.write_text(saved)
    assert res.returncode != 0, res.output[-3000:]
    assert message in res.output, res.output[-3000:]
    assert "Traceback (most recent call last)" not in res.output


@pytest.mark.workflow
def test_duplicate_key_in_a_configfile_given_on_the_command_line(project):
    extra = project / "extra.yaml"
    extra.write_text("scale: smoke\nscale: paper\n")
    res = _dry_run(project, "phe-tab1", "--configfile", "extra.yaml")
    assert res.returncode != 0 and "extra.yaml, line 2: duplicate key 'scale' (first at line 1)" in res.output, \
        res.output[-3000:]


@pytest.mark.workflow
def test_bare_figure_id_builds_that_figure_without_a_cost_notice(project):
    res = _dry_run(project, "phe-fig1", "--config", "scale=smoke")
    assert res.returncode == 0, res.output[-3000:]
    assert "figures/smoke/phe-fig1.pdf" in res.output and "figures/smoke/phe-fig1.png" in res.output
    assert "figures/smoke/phe-tab1" not in res.output
    assert "Estimated cost" not in res.output


@pytest.mark.workflow
def test_expensive_targets_get_a_cost_notice_once(project, entries, config):
    """A file target at paper scale (the notice follows the targets, not the configured scale)."""
    grid = costs.cost_summary(costs.run_costs(resolved(entries, config, "paper", ["epp-fig8b"]), 50))
    assert grid["seconds"] > costs.COST_NOTICE_S
    res = _dry_run(project, "figures/paper/epp-fig8b.pdf", "--config", "scale=smoke")
    assert res.returncode == 0, res.output[-3000:]
    assert res.output.count("Estimated cost of this run: about ") == 1, res.output[-3000:]
    assert (f"CPU time in {grid['jobs']:,} simulation jobs ({grid['cells']:,} cells; scale paper, "
            f"seeds_per_job=50") in res.output
    assert "an estimate from a cost model" in res.output


@pytest.mark.workflow
def test_skipped_figures_cells_do_not_ride_along_in_shared_pass_jobs(project, entries, config):
    """epp-fig2b's shared-pass jobs play the epp-fig8a cells of the same environment, unless
    epp-fig8* is skipped: then they hold epp-fig2b's cells only."""
    own = {s["key"] for s in resolved(entries, config, "smoke", ["epp-fig2b"])[0]["series"]}
    other = {s["key"] for f in resolved(entries, config, "smoke", ["epp-fig8a"]) for s in f["series"]} - own

    def simulated(*extra):
        res = _dry_run(project, "epp-fig2b", "--config", "scale=smoke", *extra)
        assert res.returncode == 0, res.output[-3000:]
        return {p.split("/")[3] for p in res.output.split() if p.startswith("results/smoke/runs/")}

    assert simulated() & other
    alone = simulated("skip=[epp-fig8*]")
    assert alone == own


@pytest.mark.workflow
def test_torch_threads_sets_the_threads_of_neural_jobs_only(project):
    """``torch_threads`` reaches the neural jobs' *_NUM_THREADS and cpus_per_task; a linear job
    keeps one thread; a local run caps it at --cores."""
    res = _dry_run(project, "-p", "--cores", "2", "epp-fig4", "phe-fig1", "--config", "scale=smoke", "torch_threads=3")
    assert res.returncode == 0, res.output[-3000:]
    shells = [line for line in res.output.splitlines() if "cli simulate --cell" in line]
    neural = [s for s in shells if "ensemble_pp_neural" in s]
    linear = [s for s in shells if "ensemble_pp_neural" not in s]
    assert neural and linear
    assert all("OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 MKL_NUM_THREADS=2 " in s for s in neural)
    assert all("OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 " in s for s in linear)


# ---------------------------------------------------------------------------------------
# hostile figure ids and skip patterns: refused at load, nothing executed

HOSTILE_IDS = ["phe-x`touch PWNED`", "phe-x;touch PWNED", "phe-x $(touch PWNED)", "phe-a b", "phe-../x",
               "phe-x/y", "xyz-fig1", "phe-", "PHE-fig1", "phe-fig1'"]


@pytest.mark.parametrize("fid", HOSTILE_IDS)
def test_a_hostile_figure_id_is_refused_at_load(tmp_path, fid):
    figures = tmp_path / "config" / "figures"
    figures.mkdir(parents=True)
    (figures / "phe.yaml").write_text(
        f"{json_key(fid)}:\n  title: t\n  caption: c\n  kind: table\n  static: {{name: x}}\n")
    with pytest.raises(RegistryError, match=r"figure id .* is not allowed: an id is a paper prefix"):
        registry.load_registry(tmp_path / "config", REGISTRY_SCHEMA)


def json_key(text):
    import json

    return json.dumps(text)          # a YAML double-quoted key


@pytest.mark.parametrize("pattern", ["phe-fig1;touch PWNED", "`touch PWNED`", "phe-fig1 x", "$(id)", "../x"])
def test_a_hostile_skip_pattern_is_refused(pattern):
    with pytest.raises(RegistryError, match=r"is not an id pattern"):
        registry.match_ids([pattern], ["phe-fig1", "phe-fig2"], "skip pattern")


def test_a_registry_whose_top_level_is_a_list_is_one_clear_error(tmp_path):
    figures = tmp_path / "config" / "figures"
    figures.mkdir(parents=True)
    (figures / "phe.yaml").write_text("- phe-fig1\n- phe-fig2\n")
    with pytest.raises(RegistryError, match=r"phe\.yaml: the top level must be a mapping of figure ids"):
        registry.load_registry(tmp_path / "config", REGISTRY_SCHEMA)


@pytest.mark.workflow
def test_a_hostile_id_or_skip_pattern_executes_nothing(project):
    """Neither a dry run nor a real run of REPORT.md executes a command smuggled in an id or a skip
    pattern: both stop before any job, with one line naming the id or the pattern."""
    path = project / "config" / "figures" / "phe.yaml"
    saved = path.read_text()
    path.write_text(saved + '\n"phe-x`touch PWNED`":\n  title: t\n  caption: c\n  kind: table\n  static: {name: phe-tab1}\n')
    try:
        for runner_args in (["-n"], []):
            res = subprocess.run([sys.executable, "-m", "snakemake", *runner_args, "--cores", "1",
                                  "figures/smoke/REPORT.md", "--config", "scale=smoke"], cwd=project,
                                 capture_output=True, text=True, timeout=timeout_s(300))
            out = res.stdout + res.stderr
            assert res.returncode != 0 and "figure id 'phe-x`touch PWNED`' is not allowed" in out, out[-3000:]
            assert "Traceback (most recent call last)" not in out
    finally:
        path.write_text(saved)
    res = _dry_run(project, "all", "--config", "scale=smoke", "skip=[phe-fig1`touch PWNED`]")
    assert res.returncode != 0 and "is not an id pattern" in res.output, res.output[-3000:]
    assert not (project / "PWNED").exists()
