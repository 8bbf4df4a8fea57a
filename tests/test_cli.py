"""The command line as a user meets it: help, validated choices, runs from any directory, clear
answers where there is nothing to report, and clean one-line errors for corrupt cached results.

The commands read the fixture registry (tests/data/registry: a project copy holds it as its
config/figures, or --config-dir names it), so that these tests do not change with the live registry."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from helpers import timeout_s

from ensemble_bandits import cli, records, registry
from ensemble_bandits.paths import project_root
from ensemble_bandits.tables import CacheError, read_table
from ensemble_bandits.atomic import write_table_atomic

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ["--config-dir", str(ROOT / "tests" / "data" / "registry")]     # the fixture registry


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "ensemble_bandits.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout_s(300))


def _project_copy(tmp_path) -> Path:
    """A copy of the project's config, workflow and Snakefile under ``tmp_path`` (no results), with
    the fixture registry (tests/data/registry/figures) as its config/figures."""
    import shutil

    project = tmp_path / "proj"
    shutil.copytree(ROOT / "workflow", project / "workflow")
    shutil.copytree(ROOT / "tests" / "data" / "registry" / "figures", project / "config" / "figures")
    shutil.copy(ROOT / "config" / "config.yaml", project / "config" / "config.yaml")
    shutil.copy(ROOT / "Snakefile", project / "Snakefile")
    return project


def test_every_subcommand_has_help_text():
    res = _cli("--help", cwd=ROOT)
    assert res.returncode == 0
    for cmd in ("simulate", "aggregate", "claims", "report", "timings", "estimate", "data"):
        line = next((ln for ln in res.stdout.splitlines() if ln.strip().startswith(cmd + " ")), "")
        assert len(line.split()) > 3, f"no help text for {cmd!r}:\n{res.stdout}"


def test_help_lists_the_user_commands_before_the_workflow_ones():
    res = _cli("--help", cwd=ROOT)
    listed = re.search(r"\{([a-z,-]+)\}", res.stdout).group(1).split(",")
    user, workflow = ["estimate", "progress", "timings", "data", "adopt"], ["simulate", "simulate-group", "aggregate",
                                                                   "publish", "claims", "report"]
    assert listed == user + workflow, listed
    assert res.stdout.index("For users:") < res.stdout.index("Run by the workflow's rules")


def test_every_option_of_every_subcommand_has_help_text():
    import argparse

    from ensemble_bandits.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    bare = [f"{name} {a.option_strings or a.dest}" for name, sp in sub.choices.items() for a in sp._actions
            if not a.help and not isinstance(a, argparse._HelpAction)]
    assert not bare, f"options without help text: {bare}"


def test_unknown_scale_is_refused_with_the_choices():
    res = _cli("timings", "--scale", "huge", cwd=ROOT)
    assert res.returncode == 2
    assert "invalid choice: 'huge' (choose from 'smoke', 'default', 'paper')" in res.stderr


def test_timings_without_results_says_so_from_a_subdirectory(tmp_path):
    """Started below the project root, the CLI works in the project; with no simulation logs there
    it says so, and what estimates the cost, instead of printing a table of zeros."""
    project = _project_copy(tmp_path)                        # a project copy with no results at all
    res = _cli("timings", "--scale", "smoke", cwd=project / "config")
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"(working in the project at {project.resolve()})" in res.stderr
    assert "no timings: no simulation has run at scale 'smoke'" in res.stderr
    assert "ensemble-bandits estimate --scale smoke" in res.stderr
    assert "docs/timings-smoke.md" not in res.stderr            # no committed page at this scale
    assert res.stdout == ""


def test_timings_in_a_fresh_clone_points_to_the_committed_page(tmp_path):
    """A fresh clone has no logs but has the committed measurements of the paper run: timings says
    where they are, rather than suggesting the run itself (hundreds of CPU-hours)."""
    import shutil

    project = _project_copy(tmp_path)
    (project / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "timings-paper.md", project / "docs" / "timings-paper.md")
    res = _cli("timings", "--scale", "paper", cwd=project)
    assert res.returncode == 1 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "docs/timings-paper.md" in res.stderr and "ensemble-bandits estimate --scale paper" in res.stderr
    assert "snakemake" not in res.stderr


def test_outside_any_project_the_cli_uses_its_own_checkout(tmp_path):
    res = _cli("timings", "--scale", "smoke", "phe-timing", *FIXTURE, cwd=tmp_path)
    assert f"(working in the project at {ROOT})" in res.stderr, res.stderr


def test_timings_shares_a_group_log_among_the_cells_it_names(tmp_path):
    """A shared-pass log names its cells, so each gets an equal share whichever figures were grouped;
    a log without the names (older runs) or without its "done in" line gives nothing."""
    from ensemble_bandits.joblogs import group_log_shares

    (tmp_path / "group-abc123-0-50.log").write_text("simulate-group: 3 cells\ncells: k1 k2 k3\n"
                                                  "done in 90.0 s (CPU 150.0 s, peak 812 MB)\n")
    (tmp_path / "group-abc123-50-100.log").write_text("simulate-group: 3 cells\ncells: k1 k2 k3\n")  # unfinished
    (tmp_path / "group-def456-0-50.log").write_text("simulate-group: 2 cells\ndone in 10.0 s\n")       # older
    (tmp_path / "k1-0-50.log").write_text("done in 5.0 s\n")                                            # per cell
    # seconds shared, the peak memory the job's
    assert group_log_shares(str(tmp_path)) == {(k, "0", "50"): (30.0, 50.0, 812.0) for k in ("k1", "k2", "k3")}


def test_a_jobs_done_line_states_wall_cpu_and_peak_memory_and_timings_reads_them_back():
    import time as _time

    from ensemble_bandits.joblogs import DONE_IN, _shared, done_line

    line = done_line(_time.perf_counter(), _time.process_time())
    wall, cpu, peak = _shared(DONE_IN.search(line), 1)
    assert wall >= 0 and cpu >= 0 and peak > 10, line           # this test process holds more than 10 MB
    assert _shared(DONE_IN.search("done in 4.0 s (CPU 3.0 s)"), 2) == (2.0, 1.5, None)


def test_a_resumed_jobs_done_line_counts_its_earlier_runs_or_says_it_cannot(tmp_path):
    """A job resumed from its checkpoint logs its earlier runs' time in its total; resumed from a saved
    state that does not keep that time, its line says so and timings reads no time from it."""
    import time as _time

    from ensemble_bandits.joblogs import done_line, logged_seconds

    log = tmp_path / "k-0-10.log"
    log.write_text("simulate k\n" + done_line(_time.perf_counter(), _time.process_time(), (100.0, 90.0)) + "\n")
    wall, cpu, _peak = logged_seconds(log)
    assert 100.0 <= wall < 110.0 and 90.0 <= cpu < 100.0
    log.write_text("simulate k\n" + done_line(_time.perf_counter(), _time.process_time(), None) + "\n")
    assert logged_seconds(log) is None and "resumed from a saved state" in log.read_text()
    assert logged_seconds(tmp_path / "absent.log") is None


def test_timings_page_is_the_table_under_its_command(tmp_path):
    project = _project_copy(tmp_path)
    logs = project / "results" / "smoke" / "logs" / "simulate"
    logs.mkdir(parents=True)
    (logs / "abc-0-2.log").write_text("done in 1.0 s\n")
    page = project / "docs" / "timings-smoke.md"
    res = _cli("timings", "--scale", "smoke", "phe-timing", "--page", str(page), cwd=project)
    assert res.returncode == 0, res.stderr
    text = page.read_text()
    assert text.startswith("# Simulation timings at scale smoke\n")
    # the page, typed absolute inside the project, is named from the project (pages.write_page)
    assert "Generated by `ensemble-bandits timings --scale smoke phe-timing --page docs/timings-smoke.md`" in text
    assert "peak MB" in text and "phe-timing" in text and "cores" in text


def test_timings_per_cell_sets_measured_seconds_beside_the_cost_model(tmp_path, config, fixture_entries):
    """`timings --cells`: one line per cell with logged jobs, its measured wall seconds beside the
    cost model's estimate of the same jobs (costs.cell_cost_seconds) and their ratio."""
    from ensemble_bandits import costs

    project = _project_copy(tmp_path)
    fig = registry.resolve(fixture_entries["phe-regret"], "smoke", config["scales"])
    first, rest = fig["series"][0], fig["series"][1:]
    logs = project / "results" / "smoke" / "logs" / "simulate"
    logs.mkdir(parents=True)
    (logs / f"{first['key']}-0-{first['seeds']}.log").write_text("simulate: ...\ndone in 12.5 s\n")
    res = _cli("timings", "--scale", "smoke", "phe-regret", "--seeds-per-job", "50", "--cells", cwd=project)
    assert res.returncode == 0, res.stderr
    model = costs.cell_cost_seconds(first["cell"], first["seeds"])
    line = next(ln for ln in res.stdout.splitlines() if first["key"] in ln)
    assert line.split()[-4:] == ["12.5", "-", f"{model:.1f}", f"{12.5 / model:.2f}"]   # an older log: no CPU
    assert not any(s["key"] in res.stdout for s in rest)                 # no log, no line
    assert res.stdout.splitlines()[-1].startswith("total")


def test_project_root_walks_up_and_knows_a_non_project(tmp_path):
    assert project_root(ROOT / "src" / "ensemble_bandits") == ROOT
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text("scale: smoke\n")
    (tmp_path / "Snakefile").write_text("")
    assert project_root(tmp_path / "config") == tmp_path.resolve()


def test_corrupt_table_is_a_one_line_cache_error(tmp_path):
    good = tmp_path / "t.parquet"
    write_table_atomic(pd.DataFrame({"a": [1, 2]}), good)
    assert read_table(good)["a"].tolist() == [1, 2]
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(good.read_bytes()[:20])
    with pytest.raises(CacheError, match=rf"cached result {bad} is unreadable \(.*\); delete it and rerun"):
        read_table(bad)


def test_claims_command_on_a_corrupt_table_prints_one_line(tmp_path, config, fixture_entries):
    bad = tmp_path / "phe-timing.parquet"
    bad.write_bytes(b"not parquet")
    fig = tmp_path / "phe-timing.json"
    fig.write_text(registry.figure_document(registry.resolve(fixture_entries["phe-timing"], "smoke", config["scales"]), 50))
    res = _cli("claims", "--figure", str(fig), "--table", str(bad),
               "--json", str(tmp_path / "c.json"), "--rst", str(tmp_path / "c.rst"), cwd=ROOT)
    assert res.returncode == 1
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith(f"claims: cached result {bad} is unreadable (") and last.endswith(
        "delete it and rerun, then rebuild it and what follows from it: snakemake --cores 2 "
        "figures/smoke/phe-timing.pdf --forcerun aggregate --config scale=smoke")
    assert "Traceback" not in res.stderr


def test_provenance_names_commit_scale_and_package_versions():
    line = records.provenance("smoke")
    assert line.startswith("Provenance: commit ") and "scale `smoke`" in line
    for name in ("python 3.", "numpy 2.", "scipy ", "torch ", "snakemake ", "papermill "):
        assert name in line, line
    assert "not installed" not in line


def test_cli_simulate_device_cpu_is_the_cell_as_written(tmp_path):
    """--device (set by the workflow from the config's device / gpu) reaches the agent without
    entering the cell: on the CPU it gives the run file of the cell as written, and the log says so."""
    import json

    import numpy as np

    cell = {"agent": {"name": "greedy_neural", "hidden": 8}, "env": {"name": "epp_quadratic", "d": 4, "pool": 20,
                                                                   "n_arms": 5}, "horizon": 12}
    outs = []
    for extra in ([], ["--device", "cpu"]):
        out = tmp_path / ("dev" if extra else "plain") / "seeds-0-2.npz"
        res = _cli("simulate", "--cell", json.dumps(cell), "--seeds", "0", "2", "--out", str(out), *extra, cwd=ROOT)
        assert res.returncode == 0, res.stderr
        assert ("device cpu" in res.stderr) == bool(extra)
        assert json.loads((out.parent / "cell.json").read_text()) == cell      # the cell as written
        outs.append(np.load(out))
    for k in outs[0].files:
        if not k.startswith("seconds"):
            np.testing.assert_array_equal(outs[0][k], outs[1][k])


def test_console_script_version_and_the_configured_scale(capsys):
    """`ensemble-bandits` (pyproject's console script) is cli.main: --version, and --scale defaults to
    the config's scale."""
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["ensemble-bandits"] == "ensemble_bandits.cli:main"
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.startswith("ensemble-bandits ")
    cli.main(["estimate", "phe-timing", *FIXTURE])
    scale = registry.load_yaml(ROOT / "config" / "config.yaml")["scale"]
    assert f"at scale {scale}," in capsys.readouterr().out


def test_progress_counts_the_run_files_done_and_shows_running_jobs(tmp_path, config, fixture_entries):
    """`progress`: per figure the share of its run files that exist and the cost model's time of the
    rest, the time left on the given cores, and each simulate job whose log has no "done in" line yet,
    with its last progress line."""
    from ensemble_bandits import costs

    project = _project_copy(tmp_path)
    fig = registry.resolve(fixture_entries["phe-regret"], "smoke", config["scales"])
    runs = registry.figure_runs(fig, 50)
    for f in runs[: len(runs) // 2]:
        (project / f).parent.mkdir(parents=True, exist_ok=True)
        (project / f).write_bytes(b"x")
    logs = project / "results" / "smoke" / "logs" / "simulate"
    logs.mkdir(parents=True)
    (logs / "abc-0-2.log").write_text("simulate abc: seeds 0..1\n  seeds 0-1: round 30/300, 4 s elapsed\n")
    (logs / "def-0-2.log").write_text("simulate def\ndone in 3.0 s (CPU 3.0 s)\n")
    res = _cli("progress", "--scale", "smoke", "phe-regret", "--seeds-per-job", "50", "--cores", "4", cwd=project)
    assert res.returncode == 0, res.stderr
    row = next(ln for ln in res.stdout.splitlines() if ln.startswith("phe-regret"))
    cost = costs.run_costs([fig], 50)
    rest = sum(cost[f] for f in runs[len(runs) // 2:])
    assert row.split()[1:3] == [str(len(runs)), f"{100 * (len(runs) // 2) / len(runs):.0f}%"]
    assert row.endswith(costs.format_cpu_time(rest))                       # the cost model's time of the rest
    assert f"about {costs.format_cpu_time(rest / 4)} of wall time on 4 cores" in res.stdout
    assert "abc-0-2: seeds 0-1: round 30/300, 4 s elapsed" in res.stdout and "def-0-2" not in res.stdout


def test_publishing_the_paper_report_rewrites_the_readmes_headline(tmp_path):
    """The README's headline is the published paper-scale REPORT.md's tally (ensemble_bandits.readme):
    `cli publish` of figures/paper/REPORT.md rewrites it; the README's other text stays as it is."""
    from ensemble_bandits import readme

    start, end = readme.BLOCKS["headline"]
    (tmp_path / "README.md").write_text(f"# r\n{start}\nstale\n{end}\ntail\n")
    staged = tmp_path / "staged.md"
    staged.write_text("# Replication report\n\n3 claims checked: 1 reproduced, 1 not reproduced, 1 inconclusive.\n\n"
                      "- **phe**: 3 checked: 1 reproduced, 1 not reproduced, 1 inconclusive\n")
    res = _cli("publish", "--staged", str(staged), "--out", "figures/paper/REPORT.md", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    text = (tmp_path / "README.md").read_text()
    assert readme.block(text, "headline") == readme.headline(staged.read_text()) and text.endswith(f"{end}\ntail\n")
    assert "3 of the papers' claims are checked" in text and "README.md: headline" in res.stderr


def test_publish_checks_each_file_and_carries_a_tables_copies(tmp_path):
    """`cli publish`: a staged PDF goes into place with its table's markdown and LaTeX copies; a
    file that is not what its name says is refused and nothing is copied."""
    staged, out = tmp_path / "staged", tmp_path / "figures"
    staged.mkdir()
    (staged / "t.pdf").write_bytes(b"%PDF-1.4 x")
    (staged / "t.md").write_text("| a |\n|---|\n| 1 |\n")
    (staged / "t.tex").write_text("\\begin{table}\n\\begin{tabular}{l}\na \\\\\n\\end{tabular}\n\\end{table}\n")
    res = _cli("publish", "--staged", str(staged / "t.pdf"), "--out", str(out / "t.pdf"), cwd=ROOT)
    assert res.returncode == 0, res.stderr
    assert {p.name for p in out.iterdir()} == {"t.pdf", "t.md", "t.tex"}
    (staged / "u.pdf").write_bytes(b"not a pdf")
    bad = _cli("publish", "--staged", str(staged / "u.pdf"), "--out", str(out / "u.pdf"), cwd=ROOT)
    assert bad.returncode != 0 and "is not a .pdf file" in bad.stderr and not (out / "u.pdf").exists()
