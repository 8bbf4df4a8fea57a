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


def test_round_flops_count_the_trunk_by_hand_and_grow_exactly_with_steps_and_seeds():
    """Before the first update a Greedy round is the trunk on K arms, 2 K (d D + D D) flops (the head
    is elementwise, not counted); after it each gradient step adds the same amount, and a batch of
    seeds counts each seed once."""
    env = {"name": "epp_quadratic", "d": 10, "n_arms": 5, "pool": 20}

    def flops(G, seeds, skip):
        agent = {"name": "greedy_neural", "hidden": 8, "G": G, "update_start": 4, "batch_size": 6}
        return bench.round_flops({"env": env, "agent": agent, "horizon": 50}, seeds, skip)

    assert flops(1, 1, 2) == flops(3, 1, 2) == 2 * 5 * (10 * 8 + 8 * 8)
    step = flops(2, 1, 6) - flops(1, 1, 6)
    assert step > 0 and flops(3, 1, 6) == flops(1, 1, 6) + 2 * step
    assert flops(3, 2, 6) == 2 * flops(3, 1, 6)
