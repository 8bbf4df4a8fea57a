"""A simulation job stopped at any round resumes from its checkpoint with the numbers of an
uninterrupted run (ensemble_bandits.checkpoint); a foreign, stale or damaged checkpoint is refused."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from helpers import Stop, stopping_at, timeout_s

from ensemble_bandits import runner
from ensemble_bandits.cells import identity_of
from ensemble_bandits.checkpoint import Checkpoint, CheckpointError

QUAD = {"name": "glmes_quadratic", "d": 4, "n_arms": 5}
CELLS = {
    "neural_es": {"env": QUAD, "horizon": 14, "agent": {"name": "neural_es", "m": 2, "L": 3, "N": 4, "steps": 3}},
    "neural_ts": {"env": QUAD, "horizon": 14, "agent": {"name": "neural_ts", "L": 3, "N": 4, "steps": 3}},
    "neural_es_anytime": {"env": QUAD, "horizon": 14, "agent": {"name": "neural_es_anytime", "T0": 4, "m": 2,
                                                                "L": 3, "N": 4, "steps": 2}},
    "ensemble_pp_neural": {"env": {"name": "epp_quadratic", "d": 6, "n_arms": 5, "pool": 20}, "horizon": 14,
                           "agent": {"name": "ensemble_pp_neural", "M": 2, "hidden": 8, "G": 2, "batch_size": 4,
                                     "update_start": 3}},
    "lints": {"env": {"name": "phe_linear", "d": 3, "n_arms": 4}, "horizon": 14, "agent": {"name": "lints"}},
}


def _same_numbers(whole: dict, resumed: dict) -> None:
    """Every column but the wall time bit-identical."""
    assert whole.keys() == resumed.keys()
    for key in whole:
        if key != "seconds":
            assert np.array_equal(whole[key], resumed[key]), key


@pytest.mark.parametrize("name", sorted(CELLS))
def test_stopped_at_a_random_round_resumes_bit_identically(name, tmp_path):
    cell, seeds = CELLS[name], [0, 1, 2]
    whole = runner.simulate_columns(cell, seeds)
    ident = str(identity_of(cell, seeds))
    stop = int(np.random.default_rng(len(name)).integers(3, cell["horizon"]))   # a round inside the first batch
    path = tmp_path / "job.ckpt"
    with stopping_at(cell, stop), pytest.raises(Stop):
        runner.simulate_columns(cell, seeds, checkpoint=Checkpoint(path, ident, every=0.0))
    ckpt = Checkpoint(path, ident, every=0.0)
    assert ckpt.load() and ckpt.batch[4] == stop - 1            # saved after the last round played
    resumed = runner.simulate_columns(cell, seeds, checkpoint=ckpt)
    _same_numbers(whole, resumed)


def test_a_finished_batch_is_not_played_again(tmp_path):
    cell, seeds = CELLS["lints"], list(range(4))
    ident = str(identity_of(cell, seeds))
    ckpt = Checkpoint(tmp_path / "c.ckpt", ident, every=1e9)
    first = runner.simulate_columns(cell, seeds, max_batch=2, checkpoint=ckpt)
    assert sorted(ckpt.done) == [0, 2]
    ckpt.done[2] = {k: v.copy() for k, v in ckpt.done[2].items()}
    ckpt.done[2]["regret"][:] = -1.0                          # marked: taken as is, not recomputed
    again = runner.simulate_columns(cell, seeds, max_batch=2, checkpoint=ckpt)
    assert np.all(again["regret"][again["seed"] >= 2] == -1.0)
    assert np.array_equal(again["regret"][again["seed"] < 2], first["regret"][first["seed"] < 2])


def test_a_finished_fixed_block_of_a_partial_job_is_not_played_again(tmp_path, monkeypatch):
    """A job of seeds 5-11 of a fixed-block agent plays the blocks 0-9 and 10-19; once they are in its
    checkpoint, a rerun takes both from it and plays nothing."""
    cell, seeds = CELLS["neural_es"], list(range(5, 12))
    ckpt = Checkpoint(tmp_path / "c.ckpt", str(identity_of(cell, seeds)), every=1e9)
    first = runner.simulate_columns(cell, seeds, checkpoint=ckpt)
    assert sorted(ckpt.done) == [0, 10]
    monkeypatch.setattr(runner, "_run_batch", lambda *a, **k: pytest.fail("a finished batch was played again"))
    again = runner.simulate_columns(cell, seeds, checkpoint=ckpt)
    assert np.array_equal(first["regret"], again["regret"]) and np.array_equal(first["seed"], again["seed"])


def test_foreign_stale_and_damaged_checkpoints_are_refused(tmp_path):
    cell, seeds = CELLS["lints"], [0, 1]
    path = tmp_path / "c.ckpt"
    Checkpoint(path, str(identity_of(cell, seeds))).save()
    other = {**cell, "agent": {"name": "linucb"}}
    with pytest.raises(CheckpointError, match="another job's"):
        Checkpoint(path, str(identity_of(other, seeds))).load()
    with pytest.raises(CheckpointError, match="another job's"):
        Checkpoint(path, str(identity_of(cell, [0, 1, 2]))).load()
    header, _, payload = path.read_bytes().partition(b"\n")
    stale = json.loads(header)
    stale["identity"]["algorithms"] = "0"
    path.write_bytes(json.dumps(stale).encode() + b"\n" + payload)
    with pytest.raises(CheckpointError, match="another job's"):
        Checkpoint(path, str(identity_of(cell, seeds))).load()
    path.write_bytes(header + b"\n" + payload[:-3] + b"xyz")
    with pytest.raises(CheckpointError, match="damaged"):
        Checkpoint(path, str(identity_of(cell, seeds))).load()
    path.write_bytes(b"\x80\x04 not a checkpoint")
    with pytest.raises(CheckpointError, match="no readable header"):
        Checkpoint(path, str(identity_of(cell, seeds))).load()


def _simulate(cell, out, ckpt, every):
    return [sys.executable, "-m", "ensemble_bandits.cli", "simulate", "--cell", json.dumps(cell), "--seeds", "0", "3",
            "--out", str(out), "--checkpoint", str(ckpt), "--checkpoint-every", str(every)]


def test_a_killed_job_rerun_resumes_and_writes_the_uninterrupted_numbers(tmp_path):
    """The job as the workflow runs it: SIGKILL once a checkpoint exists, run the same command again."""
    cell = {**CELLS["neural_es"], "horizon": 60}
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    ref = tmp_path / "ref.npz"
    subprocess.run(_simulate(cell, ref, tmp_path / "ref.ckpt", 1e9), check=True, env=env, capture_output=True)
    out, ckpt = tmp_path / "run.npz", tmp_path / "run.ckpt"
    proc = subprocess.Popen(_simulate(cell, out, ckpt, 0), env=env, stderr=subprocess.PIPE, text=True)
    limit = timeout_s(120)
    deadline = time.monotonic() + (limit if limit is not None else float("inf"))
    while not ckpt.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    if proc.poll() is not None:
        pytest.skip("the job finished before it could be killed (machine too fast for this horizon)")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert ckpt.exists() and not out.exists()
    rerun = subprocess.run(_simulate(cell, out, ckpt, 0), env=env, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert "resuming from" in rerun.stderr and not ckpt.exists()
    assert "the job's earlier runs (to their last saved state)" in rerun.stderr.strip().splitlines()[-1]
    with np.load(ref) as a, np.load(out) as b:
        assert sorted(a.files) == sorted(b.files)
        for key in a.files:
            if not key.startswith("seconds"):
                assert np.array_equal(a[key], b[key]), key


def test_the_cli_refuses_another_jobs_checkpoint_in_one_line(tmp_path):
    cell = CELLS["lints"]
    ckpt = tmp_path / "x.ckpt"
    Checkpoint(ckpt, str(identity_of({**cell, "agent": {"name": "linucb"}}, [0, 1, 2]))).save()
    res = subprocess.run(_simulate(cell, tmp_path / "x.npz", ckpt, 300), capture_output=True, text=True)
    assert res.returncode != 0
    last = res.stderr.strip().splitlines()[-1]
    assert "another job's" in last and str(ckpt) in last and "Traceback" not in res.stderr


def _run_file(tmp_path, cell, first, end):
    from ensemble_bandits.registry import cell_key

    out = tmp_path / "runs" / cell_key(cell) / f"seeds-{first}-{end}.npz"
    out.parent.mkdir(parents=True, exist_ok=True)
    runner.simulate_job(cell, list(range(first, end)), out)
    return out


def test_seeds_another_job_played_are_taken_and_the_job_gives_one_jobs_numbers(tmp_path):
    """Seeds 0-19 of a fixed-block agent (blocks 0-9, 10-19): stopped inside block 0, block 10-19 taken
    from another job's run file (`cli adopt`), resumed: the numbers of one uninterrupted job."""
    from ensemble_bandits.checkpoint import adopt_runs

    cell, seeds = CELLS["neural_es"], list(range(20))
    whole = runner.simulate_columns(cell, seeds)
    ident, path = str(identity_of(cell, seeds)), tmp_path / "job.ckpt"
    with stopping_at(cell, 6), pytest.raises(Stop):
        runner.simulate_columns(cell, seeds, checkpoint=Checkpoint(path, ident, every=0.0))
    other = _run_file(tmp_path, cell, 10, 20)
    log = tmp_path / "logs" / "simulate" / f"{other.parent.name}-10-20.log"      # the other job's time
    log.parent.mkdir(parents=True)
    log.write_text("simulate ...\ndone in 5.0 s (CPU 4.0 s, peak 300 MB)\n")
    before = Checkpoint(path, ident)
    assert before.load() and before.spent[1] > 0
    assert adopt_runs(path, [other]) == [list(range(10, 20))]
    ckpt = Checkpoint(path, ident, every=0.0)
    assert ckpt.load() and sorted(ckpt.done) == [10] and ckpt.batch[0] == list(range(10))
    assert np.allclose(ckpt.spent, (before.spent[0] + 5.0, before.spent[1] + 4.0))     # counted as the job's
    resumed = runner.simulate_columns(cell, seeds, checkpoint=ckpt)
    _same_numbers(whole, resumed)


def test_adopt_refuses_another_cells_run_and_a_run_that_holds_no_whole_batch(tmp_path):
    cell, seeds = CELLS["neural_es"], list(range(20))
    path = tmp_path / "job.ckpt"
    Checkpoint(path, str(identity_of(cell, seeds))).save()
    foreign = _run_file(tmp_path, CELLS["lints"], 10, 12)
    partial = _run_file(tmp_path, cell, 12, 14)           # seeds 12-13 of block 10-19: no whole batch
    for run, says in ((foreign, "is not a run of cell"), (partial, "no whole batch")):
        res = subprocess.run([sys.executable, "-m", "ensemble_bandits.cli", "adopt", "--checkpoint", str(path),
                              str(run)], capture_output=True, text=True)
        assert res.returncode != 0 and "Traceback" not in res.stderr
        last = res.stderr.strip().splitlines()[-1]
        assert last.startswith("adopt: ") and says in last, last
    assert Checkpoint(path, str(identity_of(cell, seeds))).load()      # left as it was
