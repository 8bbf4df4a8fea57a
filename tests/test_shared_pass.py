"""The shared pass (ensemble_bandits.shared): several cells on one environment in one lockstep pass
give, cell by cell, the run file of the per-cell run (every column but the wall time, bit for bit).
The figures are the fixture registry's shared-pass ones (tests/data/registry/figures/epp.yaml)."""
from __future__ import annotations

import numpy as np
import pytest

from ensemble_bandits import costs, registry, runner, shared
from ensemble_bandits.cells import check_group
from ensemble_bandits.agents.linear import LinearAgent


def _same_but_seconds(a: dict, b: dict) -> bool:
    keys = [k for k in a if not k.startswith("seconds")]
    return sorted(keys) == sorted(k for k in b if not k.startswith("seconds")) and all(
        a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in keys)


def _smoke_groups(entries, config, fids):
    figs = [registry.resolve(entries[f], "smoke", config["scales"]) for f in fids]
    return figs, registry.shared_groups(figs, 4)


@pytest.mark.parametrize("fid", ["epp-shared-finite", "epp-shared-sphere"])
def test_shared_pass_run_files_identical_to_per_cell_runs(fixture_entries, config, fid):
    """Smoke grid of each figure: every group's shared pass against each cell run alone."""
    figs, groups = _smoke_groups(fixture_entries, config, [fid])
    assert {k for g in groups for k in g["keys"]} == {s["key"] for s in figs[0]["series"]}
    seeds = range(figs[0]["seeds"])
    for group in groups:
        together = runner.simulate_group_columns(group["cells"], seeds)
        for cell, cols in zip(group["cells"], together):
            alone = runner.simulate_columns(cell, seeds)
            assert _same_but_seconds(cols, alone), (fid, cell["agent"])


def test_shared_pass_identical_at_paper_dimensions():
    """d = 50, |X| = 10,000 (the widest products): TS, ES++ and ensemble sampling, a few rounds."""
    env = {"name": "russo_finite", "d": 50, "n_arms": 10000}
    agents = [{"name": "lints", "prior_var": 10.0, "noise_sd": 1.0},
              {"name": "ensemble_pp", "M": 4, "reference": "gaussian", "perturbation": "sphere"},
              {"name": "ensemble_pp", "M": 64, "reference": "coordinate", "perturbation": "coordinate"},
              {"name": "ensemble_sampling", "m": 8, "lam": 0.1}]
    cells = [{"env": env, "agent": a, "horizon": 40} for a in agents]
    together = runner.simulate_group_columns(cells, [3, 4], score_bytes=2 ** 20)
    for cell, cols in zip(cells, together):
        assert _same_but_seconds(cols, runner.simulate_columns(cell, [3, 4]))


def test_shared_pass_with_an_agent_that_does_not_propose():
    """LinUCB, LinPHE and epsilon-greedy choose on their own inside the pass; same numbers."""
    env = {"name": "phe_linear", "d": 5, "n_arms": 30}
    agents = [{"name": "linucb"}, {"name": "linphe"}, {"name": "egreedy"}, {"name": "lints"}]
    cells = [{"env": env, "agent": a, "horizon": 60} for a in agents]
    together = runner.simulate_group_columns(cells, range(3))
    for cell, cols in zip(cells, together):
        assert _same_but_seconds(cols, runner.simulate_columns(cell, range(3)))


def test_shared_pass_does_not_depend_on_batch_or_chunk():
    """Same seed, same numbers: one batch, one seed per batch, one instance per product."""
    env = {"name": "russo_finite", "d": 8, "n_arms": 200}
    cells = [{"env": env, "agent": {"name": "ensemble_pp", "M": m}, "horizon": 50} for m in (2, 16)]
    whole = runner.simulate_group_columns(cells, range(4))
    split = runner.simulate_group_columns(cells, range(4), max_batch=1, score_bytes=1)
    tail = runner.simulate_group_columns(cells, range(2, 4))
    for w, s, t in zip(whole, split, tail):
        assert _same_but_seconds(w, s)
        assert _same_but_seconds({k: v[len(v) // 2:] for k, v in w.items()}, t)


def test_step_many_consumes_the_noise_as_step():
    from ensemble_bandits.runner import make_env

    spec = {"name": "russo_finite", "d": 4, "n_arms": 20}
    one, other, many = (make_env(spec, [0, 1]) for _ in range(3))
    rng = np.random.default_rng(0)
    for _ in range(5):
        a, b = rng.integers(0, 20, 2), rng.integers(0, 20, 2)
        (ra, ga), (rb, gb) = many.step_many([a, b])
        for env, arms, r, g in ((one, a, ra, ga), (other, b, rb, gb)):    # each as on its own copy
            r1, g1 = env.step(arms)
            assert np.array_equal(r, r1) and np.array_equal(g, g1)
        assert not np.array_equal(ra, rb)


def test_greedy_many_is_each_agents_greedy():
    """The shared product's argmax against each agent's own greedy, on random thetas."""
    from ensemble_bandits.runner import make_agent, make_env

    env = make_env({"name": "russo_finite", "d": 6, "n_arms": 300}, range(5))
    agents = [make_agent({"name": n}, env, range(5), 10) for n in ("lints", "ensemble_pp", "ensemble_sampling")]
    rng = np.random.default_rng(1)
    thetas = [rng.standard_normal((5, 6)) for _ in agents]
    got = shared.greedy_many(agents, thetas, env.observe(1), score_bytes=8 * 300 * 3 * 2)
    for agent, theta, arms in zip(agents, thetas, got):
        naive = np.array([np.argmax(env.features[b] @ theta[b] + agent.jitter[b]) for b in range(5)])
        assert np.array_equal(arms, naive) and np.array_equal(arms, agent.greedy(theta, env.observe(1)))


def test_proposes_only_for_the_greedy_select():
    from ensemble_bandits.agents import AGENTS

    assert {n for n, c in AGENTS.items() if getattr(c, "proposes", False)} >= {"lints", "ensemble_pp",
                                                                               "ensemble_sampling"}
    for name, cls in AGENTS.items():
        if getattr(cls, "proposes", False):
            assert cls.select is LinearAgent.select, name


def test_check_group_refuses_mixed_environments_and_timing_cells():
    a = {"env": {"name": "russo_finite", "d": 4}, "agent": {"name": "lints"}, "horizon": 10}
    with pytest.raises(ValueError, match="one environment"):
        check_group([a, dict(a, env={"name": "russo_finite", "d": 5})])
    with pytest.raises(ValueError, match="one environment"):
        check_group([a, dict(a, horizon=11)])
    with pytest.raises(ValueError, match="timing"):
        check_group([a, dict(a, timing="unbatched")])


def test_shared_groups_partition_the_opted_in_cells(fixture_entries, config):
    figs = [registry.resolve(fixture_entries[f], "default", config["scales"]) for f in sorted(fixture_entries)]
    groups = registry.shared_groups(figs, 2)
    keys = [k for g in groups for k in g["keys"]]
    assert len(keys) == len(set(keys))                           # each cell in one group
    wanted = {s["key"] for f in figs if f["entry"].get("shared_pass") for s in f["series"]}
    assert set(keys) == wanted and wanted
    for g in groups:
        assert 1 <= len(g["keys"]) <= 2 and g["scale"] == "default"
        check_group(g["cells"])
        assert [registry.cell_key(c) for c in g["cells"]] == g["keys"]
    opted = {f["id"] for f in figs if f["entry"].get("shared_pass")}
    assert opted == {"epp-shared-finite", "epp-shared-sphere"}
    assert max(len(g["keys"]) for g in groups) == 2              # a panel's 5 cells split into groups of 2


def test_cost_model_knows_the_shared_pass(fixture_entries, config):
    """A shared pass makes the finite-arm cells cheaper, never dearer; the sphere cells cost the same."""
    fig = registry.resolve(fixture_entries["epp-shared-finite"], "paper", config["scales"])
    alone = {s["key"]: costs.cell_cost_seconds(s["cell"], 50) for s in fig["series"]}
    together = costs.run_costs([fig], 50)
    for path, c in together.items():
        key = path.split("/")[3]
        assert c < alone[key]
    sphere = registry.resolve(fixture_entries["epp-shared-sphere"], "paper", config["scales"])
    for s in sphere["series"][:3]:
        assert costs.cell_cost_seconds(s["cell"], 50, shared=True) == costs.cell_cost_seconds(s["cell"], 50)


def test_cli_simulate_group_writes_the_run_files_of_cli_simulate(tmp_path, capsys):
    import json

    from ensemble_bandits import cli

    env = {"name": "russo_finite", "d": 5, "n_arms": 50}
    cells = [{"env": env, "agent": a, "horizon": 30} for a in ({"name": "lints"}, {"name": "ensemble_pp", "M": 4})]
    outs = [str(tmp_path / f"g{i}" / "seeds-2-5.npz") for i in range(2)]
    cli.main(["simulate-group", "--cells", json.dumps(cells), "--seeds", "2", "5", "--out", *outs])
    assert "\ncells: g0 g1\n" in capsys.readouterr().err          # its log names its cells, for `timings`
    for i, (cell, out) in enumerate(zip(cells, outs)):
        alone = str(tmp_path / f"a{i}" / "seeds-2-5.npz")
        cli.main(["simulate", "--cell", json.dumps(cell), "--seeds", "2", "5", "--out", alone])
        a, b = np.load(out), np.load(alone)
        assert _same_but_seconds(dict(a), dict(b))
        assert json.loads((tmp_path / f"g{i}" / "cell.json").read_text()) == cell
    with pytest.raises(SystemExit, match="2 cells but 1 output files"):
        cli.main(["simulate-group", "--cells", json.dumps(cells), "--seeds", "0", "1", "--out", outs[0]])
