"""Bad values fail before any job, in one line naming the figure or file, the key, the value and what
is allowed (hyper-parameter values, claim arguments, scale overrides, seeds, encodings, command-line
arguments); damaged committed files say how to restore them."""
from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import timeout_s

from ensemble_bandits import cells, cli, registry
from ensemble_bandits.claims.core import ClaimError
from ensemble_bandits.claims.evaluate import validate_names
from ensemble_bandits.registry import RegistryError
from ensemble_bandits.records import read_record

ENV = {"name": "russo_finite", "d": 5, "n_arms": 10}


@pytest.mark.parametrize("agent, message", [
    ({"name": "ensemble_pp", "M": 2.5}, "hyper-parameter M = 2.5 is not allowed: an integer"),
    ({"name": "ensemble_pp", "M": 0}, "hyper-parameter M = 0 is not allowed: at least 1"),
    ({"name": "ensemble_pp", "M": -2}, "hyper-parameter M = -2 is not allowed: at least 1"),
    ({"name": "lints", "prior_var": 0}, "hyper-parameter prior_var = 0 is not allowed: more than 0"),
    ({"name": "lints", "noise_sd": -1.0}, "hyper-parameter noise_sd = -1.0 is not allowed: at least 0"),
    ({"name": "linucb", "lam": "one"}, "hyper-parameter lam = 'one' is not allowed: a number"),
    ({"name": "ensemble_sampling", "m": "X"}, "hyper-parameter m = 'X' is not allowed: a number or one of T, horizon"),
])
def test_a_bad_agent_value_is_refused_naming_key_value_and_what_is_allowed(agent, message):
    with pytest.raises(ValueError) as err:
        cells.check_cell({"env": ENV, "agent": agent, "horizon": 10})
    assert str(err.value) == f"agent {agent['name']!r}: {message}"


@pytest.mark.parametrize("env, message", [
    ({"name": "russo_finite", "d": 0, "n_arms": 10}, "d = 0 is not allowed: at least 1"),
    ({"name": "russo_finite", "d": 5, "n_arms": 0}, "n_arms = 0 is not allowed: at least 1"),
    ({"name": "sphere_gaussian", "d": 5, "n_arms": 4, "noise_sd": -1}, "noise_sd = -1 is not allowed: at least 0"),
])
def test_a_bad_environment_value_is_refused(env, message):
    with pytest.raises(ValueError, match=f"environment {env['name']!r}: hyper-parameter {message}"):
        cells.check_cell({"env": env, "agent": {"name": "lints"}, "horizon": 10})


def test_symbolic_values_the_classes_declare_are_accepted():
    cells.check_cell({"env": ENV, "agent": {"name": "ensemble_sampling", "m": "T"}, "horizon": 10})
    cells.check_cell({"env": {"name": "sphere_logistic", "d": 3, "n_arms": 4},
                       "agent": {"name": "ucb_glm", "alpha": 1.0}, "horizon": 10})


def test_a_misspelt_claim_argument_is_refused_at_load_naming_the_arguments():
    entry = {"id": "phe-x", "claims": [{"id": "c", "quote": "q", "checks": [
        {"fn": "not_worse", "args": {"a": "A", "baselines": ["B"], "rel_toll": 0.2}}]}]}
    with pytest.raises(ClaimError, match=r"phe-x: claim 'c': check 'not_worse' has no argument\(s\) \['rel_toll'\]; "
                                         r"its arguments: a, baselines, collapse, location, panels, rel_tol, "
                                         r"report_only, robust"):
        validate_names(entry, ["A", "B"], [""])


def test_a_grid_variable_typo_in_a_scale_override_is_refused(fixture_entries, config):
    entry = dict(fixture_entries["phe-regret"])
    entry["scales"] = {"smoke": {"seeds": 3, "horizon": 200, "grid": {"aa": [2]}}}
    with pytest.raises(RegistryError, match=r"figure 'phe-regret', scales: smoke: grid variable\(s\) \['aa'\] are on no "
                                            r"panel or curve grid"):
        registry.resolve(entry, "smoke", config["scales"])


def test_an_absurd_seed_count_is_refused_before_the_graph_is_built(fixture_entries, config):
    entry = dict(fixture_entries["phe-regret"], seeds=10 ** 9)
    with pytest.raises(RegistryError, match=r"1,000,000,000 seeds at scale paper is more than 100,000; a typo\?"):
        registry.resolve(entry, "paper", config["scales"])


def test_a_registry_file_that_is_not_utf8_is_one_line(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_bytes("phe-x:\n  title: caf\xe9\n".encode("latin-1"))
    with pytest.raises(RegistryError, match=r"x\.yaml: not UTF-8 text .* save it as UTF-8"):
        registry.load_yaml(path)
    with pytest.raises(RegistryError, match=r"nope\.yaml: cannot be read"):
        registry.load_yaml(tmp_path / "nope.yaml")


@pytest.mark.parametrize("argv, message", [
    (["simulate", "--cell", "{not json", "--seeds", "0", "2", "--out", "x.npz"], "--cell is not valid JSON"),
    (["simulate", "--cell", "[1]", "--seeds", "0", "2", "--out", "x.npz"], "--cell must be a JSON object, got list"),
    (["simulate", "--cell", '{"env": {"name": "russo_finite", "d": 3, "n_arms": 5}, "agent": {"name": "lints"}, '
      '"horizon": 5}', "--seeds", "3", "3", "--out", "x.npz"], "--seeds 3 3: need 0 <= FIRST < END"),
    (["simulate", "--cell", "{}", "--seeds", "0", "1", "--out", "x.npz"], "a cell is a JSON object with env, agent"),
    (["simulate-group", "--cells", "{}", "--seeds", "0", "1", "--out", "x.npz"], "--cells must be a JSON list"),
    (["simulate", "--cell", '{"env": {"name": "nope"}, "agent": {"name": "lints"}, "horizon": 5}', "--seeds", "0",
      "1", "--out", "x.npz"], "invalid cell: unknown environment 'nope'; known environments: "),
])
def test_cli_simulate_bad_arguments_are_one_line(argv, message):
    with pytest.raises(SystemExit, match=message):
        cli.main(argv)


def test_a_damaged_committed_record_says_how_to_restore_it(tmp_path):
    path = tmp_path / "figures" / "paper" / "records" / "phe-fig1.json"
    path.parent.mkdir(parents=True)
    path.write_text("{broken")
    with pytest.raises(ValueError, match=r"restore the committed file with `git checkout -- .*phe-fig1\.json`"):
        read_record(path)


def test_a_job_killed_by_a_signal_says_so(tmp_path):
    from helpers import ROOT

    log = tmp_path / "x.log"
    res = subprocess.run(["bash", str(ROOT / "workflow" / "scripts" / "logged.sh"), str(log), sys.executable, "-c",
                          "import os, signal, sys; print('step 3 of 9', file=sys.stderr, flush=True); "
                          "os.kill(os.getpid(), signal.SIGTERM)"], capture_output=True, text=True)
    assert res.returncode == 128 + 15
    assert "error: killed by signal 15 (TERM); its last line: step 3 of 9" in res.stderr


@pytest.mark.workflow
def test_a_failing_report_job_leaves_the_committed_report_and_names_the_fix(tmp_path):
    """A damaged committed record stops the REPORT.md job, whose message names `git checkout`;
    the committed REPORT.md, written only by the publish copy, is still there, byte for byte."""
    import shutil

    from helpers import ROOT, copy_project

    project = copy_project(tmp_path / "p")
    shutil.copytree(ROOT / "figures" / "paper", project / "figures" / "paper")
    report = project / "figures" / "paper" / "REPORT.md"
    before = report.read_bytes()
    (project / "figures" / "paper" / "records" / "phe-tab1.json").write_text("{damaged")
    # the ids committed without a paper record (reuse_records would build those): skipped
    from ensemble_bandits import registry

    recorded = {p.stem for p in (ROOT / "figures" / "paper" / "records").glob("*.json")}
    skip = "[" + ",".join(sorted(set(registry.load_registry(ROOT / "config")) - recorded)) + "]"
    res = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "figures/paper/REPORT.md", "--forcerun",
                          "report_all", "--config", "scale=paper", "reuse_records=true", f"skip={skip}"],
                         cwd=project, capture_output=True, text=True, timeout=timeout_s(600))
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-3000:]
    assert "restore the committed file with `git checkout -- figures/paper/records/phe-tab1.json`" in out, out[-3000:]
    assert report.read_bytes() == before
