"""The README's Quick start durations: the page tools/measure_quickstart.py writes (the README's own
commands, timed in a fresh clone with a new virtual environment) and what the README's durations block
makes of it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers import ROOT, timeout_s

from ensemble_bandits import quickstart, readme

TOOL = ROOT / "tools" / "measure_quickstart.py"
MACHINE = dict(cores=2, versions="Python 3.11.7, numpy 2.4.6, torch 2.13.0")


def _row(wall, load_before=0.31):
    return dict(wall=wall, load_before=load_before, load_after=1.94, commit="abc1234", date="2026-11-29 14:00 UTC")
README = """# T

## Quick start

```bash
{first}   # a comment, part of the line as written
{second}
```

{start}
old
{end}
"""


def _readme(first="python3 -m pip install -e . && snakemake --cores all", second="python3 -m pytest") -> str:
    start, end = readme.BLOCKS["durations"]
    return README.format(first=first, second=second, start=start, end=end)


def test_the_commands_are_the_quick_start_blocks_lines_as_written():
    first, second = quickstart.commands(_readme())
    assert first == "python3 -m pip install -e . && snakemake --cores all   # a comment, part of the line as written"
    assert second == "python3 -m pytest"


def test_the_readme_states_the_measured_durations_of_its_own_commands_and_else_its_estimate():
    text = _readme()
    first, second = quickstart.commands(text)
    page = quickstart.page({first: _row(9000.0), second: _row(1500.4, 2.5)}, MACHINE)
    assert quickstart.measured(page) == {first: 9000.0, second: 1500.4}
    assert quickstart.rows(page)[second] == _row(1500.4, 2.5)
    said = quickstart.sentence(text, page)
    assert "default scale) took 2.5 h, install included, in a fresh clone on an idle 2-core machine" in said
    assert "the second (the tests) took 25 min, install included, in a fresh clone on 2 cores already at a load average of 2.5 from other work" \
        in said
    assert quickstart.sentence(text, None) == quickstart.FALLBACK
    half = quickstart.sentence(text, quickstart.page({second: _row(1500.4, 2.5)}, MACHINE))   # the first not timed yet
    assert quickstart.ESTIMATES[0] in half and "the second (the tests) took 25 min" in half
    other = quickstart.page({"true": _row(1.0), "false": _row(2.0)}, MACHINE)   # commands the README no longer gives
    assert quickstart.sentence(text, other) == quickstart.FALLBACK


def _tool(repo: Path, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "EB_SLURM_TEST": "1"}      # the caller's settings, which the clone must not see
    return subprocess.run([sys.executable, str(TOOL), "--repo", str(repo), *args], env=env, capture_output=True,
                          text=True, timeout=timeout_s(120))


def _git_repo(path: Path, text: str) -> Path:
    path.mkdir()
    (path / "README.md").write_text(text)
    (path / "docs").mkdir()
    for args in (["init", "-q"], ["add", "README.md"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "t"]):
        subprocess.run(["git", *args], cwd=path, check=True)
    return path


def test_the_tool_times_the_readmes_commands_in_a_fresh_clone_and_rewrites_the_durations_block(tmp_path):
    """The README's commands run in the clone (not the repository), in a new environment that has
    none of the caller's packages or settings, and the README's block then states their times."""
    beside = "../" + "shared"  # spelled apart: no file may name the directory beside the checkout
    first = f'test ! -e {beside} && test -z "$EB_SLURM_TEST$PYTHONPATH" && touch made-here'
    second = 'test -e made-here && python3 -c "import sys; assert sys.prefix.endswith(\'.venv\')"'
    repo = _git_repo(tmp_path / "repo", _readme(first, second))
    done = _tool(repo)
    assert done.returncode == 0, done.stderr
    page = (repo / quickstart.PAGE).read_text()
    assert list(quickstart.measured(page)) == quickstart.commands(_readme(first, second))
    assert "numpy not installed" in page and "Machine: " in page
    assert not (repo / "made-here").exists()
    assert readme.block((repo / "README.md").read_text(), "durations") == quickstart.sentence(_readme(first, second), page)
    assert "install included, in a fresh clone" in quickstart.sentence(_readme(first, second), page)


def test_a_command_that_fails_writes_no_page(tmp_path):
    repo = _git_repo(tmp_path / "repo", _readme())
    done = _tool(repo, "--commands", "true", "exit 3")
    assert done.returncode != 0 and "exit 3 after" in done.stderr
    assert not (repo / quickstart.PAGE).exists()


def test_only_times_one_command_in_a_clone_of_its_own_and_keeps_the_others_row(tmp_path):
    """The two commands timed in different sessions: `--only 2` replaces the second's row and keeps
    the first's as it was; `--only 3` of a two-command Quick start is refused."""
    text = _readme("true", 'test ! -e made-here && python3 -c "pass"')
    first, second = quickstart.commands(text)
    repo = _git_repo(tmp_path / "repo", text)
    (repo / quickstart.PAGE).write_text(quickstart.page({first: _row(4321.0), second: _row(9.0)}, MACHINE))
    done = _tool(repo, "--only", "2")
    assert done.returncode == 0, done.stderr
    page = (repo / quickstart.PAGE).read_text()
    timed = quickstart.rows(page)
    assert list(timed) == [first, second] and timed[first] == _row(4321.0)
    assert timed[second]["wall"] < 60 and timed[second] != _row(9.0)
    assert "default scale) took 72 min" in readme.block((repo / "README.md").read_text(), "durations")
    refused = _tool(repo, "--only", "3")
    assert refused.returncode != 0 and "the Quick start has 2 commands" in refused.stderr
