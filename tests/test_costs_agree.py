"""One cost function (costs.work_left) behind `ensemble-bandits estimate`, `ensemble-bandits
progress` and Snakemake's notice before a run: committed archives and present run files cost
nothing, skipped figures take no part, a shared-pass job counts once, and the job count is the
number of simulation jobs in Snakemake's DAG."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ensemble_bandits import costs, paths, registry
from helpers import copy_project, timeout_s

ROOT = Path(__file__).resolve().parents[1]


def _figs(entries, config, scale, ids):
    return [registry.resolve(entries[i], scale, config["scales"]) for i in ids]


def test_work_left_counts_a_shared_pass_job_once_and_archived_or_present_runs_not_at_all(fixture_entries, config):
    """On the fixture registry's shared-pass figures (tests/data/registry/figures/epp.yaml)."""
    shared = [i for i in sorted(fixture_entries) if fixture_entries[i].get("shared_pass")]
    figs = _figs(fixture_entries, config, "default", shared)
    groups = registry.shared_groups(figs, 64)
    alone = costs.work_left(figs, 50)
    grouped = costs.work_left(figs, 50, groups=groups)
    assert grouped["runs"] == alone["runs"] and grouped["seconds"] == alone["seconds"]
    assert alone["jobs"] == len(alone["runs"])                                # one job per run file
    blocks = {(g["id"], Path(p).name) for g in groups for k in g["keys"] for p in alone["runs"]
              if f"/runs/{k}/" in p}
    assert grouped["jobs"] == len(blocks) < alone["jobs"]                     # one job per group and seed block
    covered = {f["id"]: {s["key"] for s in f["series"]} for f in figs[:1]}
    fewer = costs.work_left(figs, 50, covered=covered)
    own = {p for p in costs.run_costs(figs[:1], 50)}
    assert set(fewer["runs"]) == set(alone["runs"]) - own or len(figs) == 1
    assert costs.work_left(figs, 50, exists=lambda p: True)["jobs"] == 0


def test_an_archive_holding_a_cells_first_seeds_leaves_the_later_blocks_to_run(fixture_entries, config):
    """As the DAG does (uncovered_runs): an archive of a cell's first n seeds covers the blocks that
    start before n, and the blocks after it are run and cost (a figure at look 1 of its plan, or a
    fresh study's seeds)."""
    fig = _figs(fixture_entries, config, "default", sorted(fixture_entries)[:1])[0]
    every = costs.work_left([fig], 1)
    key = {paths.run_key(p) for p in every["runs"]}.pop()
    blocks = sorted(paths.run_seeds(p)[0] for p in every["runs"] if paths.run_key(p) == key)
    assert len(blocks) > 1, blocks
    part = costs.work_left([fig], 1, covered={fig["id"]: {key: blocks[1]}})
    assert sorted(set(every["runs"]) - set(part["runs"])) == sorted(
        p for p in every["runs"] if paths.run_key(p) == key and paths.run_seeds(p)[0] < blocks[1])
    assert costs.work_left([fig], 1, covered={fig["id"]: {key}})["jobs"] == every["jobs"] - len(blocks)


def _numbers(text: str, what: str):
    m = re.search(r"about ([\d.,]+ (?:h|min|s)) of CPU time in ([\d,]+) simulation jobs", text)
    if what == "progress":
        m = re.search(r"left: ([\d,]+) simulation jobs, about ([\d.,]+ (?:h|min|s)) of CPU time", text)
        return (m.group(2), int(m.group(1).replace(",", ""))) if m else None
    if what == "estimate":
        m = re.search(r"to run here: ([\d,]+) simulation jobs \([\d,]+ cells\), about ([\d.,]+ (?:h|min|s))", text)
        return (m.group(2), int(m.group(1).replace(",", ""))) if m else None
    return (m.group(1), int(m.group(2).replace(",", ""))) if m else None


@pytest.mark.workflow
@pytest.mark.parametrize("skip", ["[]", "[glmes-fig4b,glmes-fig5*]"])
def test_estimate_progress_and_the_notice_agree_with_the_dag(tmp_path, skip):
    """A fresh clone (the committed paper-scale archives and records, no results): the three cost
    figures of a paper-scale `all` are the same, and their job count is the DAG's simulation jobs.
    The notebooks are made newer than the committed figures, as a git checkout may leave them: every
    committed figure is then rebuilt, from its archive (a figure decided at a look of its plan at that
    look, not at every seed), and simulates nothing the notice does not count."""
    project = copy_project(tmp_path / "p")
    shutil.copytree(ROOT / "figures" / "paper", project / "figures" / "paper")
    for notebook in (project / "notebooks").glob("*.ipynb"):
        os.utime(notebook)
    dry = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "2", "all", "--config", "scale=paper",
                          f"skip={skip}"], cwd=project, capture_output=True, text=True, timeout=timeout_s(600))
    out = dry.stdout + dry.stderr
    assert dry.returncode == 0, out[-3000:]
    stats = out[out.index("Job stats"):]
    dag = sum(int(n) for name, n in re.findall(r"^(simulate\S*)\s+(\d+)$", stats.split("\n\n")[0], re.M))
    notice = _numbers(out, "notice")
    cli = [sys.executable, "-m", "ensemble_bandits.cli"]
    est = subprocess.run([*cli, "estimate", "--scale", "paper", "--skip", skip], cwd=project, capture_output=True,
                         text=True, timeout=timeout_s(300))
    prog = subprocess.run([*cli, "progress", "--scale", "paper", "--skip", skip], cwd=project, capture_output=True,
                          text=True, timeout=timeout_s(300))
    assert est.returncode == 0 and prog.returncode == 0, est.stderr + prog.stderr
    if dag == 0:            # every figure left in is committed: no notice, and both say nothing is left to run
        assert notice is None, out[-3000:]
        assert _numbers(est.stdout, "estimate") == ("0 s", 0) == _numbers(prog.stdout, "progress"), (
            est.stdout[-500:], prog.stdout[-800:])
        return
    assert notice is not None, out[-3000:]
    assert _numbers(est.stdout, "estimate") == notice == _numbers(prog.stdout, "progress"), (est.stdout[-500:],
                                                                                             prog.stdout[-800:])
    assert notice[1] == dag, f"notice {notice}, DAG {dag} simulation jobs"
