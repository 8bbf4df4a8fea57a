"""The benchmark's measuring helpers run and time what they name (speed itself is measured by
``python -m ensemble_bandits.bench``, not by tests)."""
from ensemble_bandits import bench


def test_history_growth_times_both_agents_of_the_quadratic_panel():
    out = bench.history_growth(at=(3, 6), rounds=1)
    assert set(out) == {"Ensemble++", "LMC-TS"}
    assert all(early > 0 and late > 0 for early, late in out.values())


def test_per_round_growth_times_each_start_round_with_any_fit_attribute():
    env = {"name": "epp_quadratic", "d": 10, "n_arms": 5, "pool": 20}
    agent = {"name": "lmcts", "hidden": 8, "num_iter": 3}
    cost = bench.per_round_growth(env, agent, seeds=1, at=(4, 8), rounds=1, fit_attr="num_iter")
    assert set(cost) == {4, 8} and min(cost.values()) > 0
