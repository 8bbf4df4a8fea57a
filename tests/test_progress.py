"""A simulation job's log says how far it is: round, elapsed time, rate and time left."""
import re

import numpy as np

from ensemble_bandits import runner


def test_progress_lines_give_elapsed_rate_and_time_left(capsys):
    progress = runner._progress([3, 4, 5])
    for t in range(1, 101):
        progress(t, 100)
    lines = capsys.readouterr().err.rstrip("\n").splitlines()
    assert len(lines) == 10
    pattern = re.compile(r"^  seeds 3-5: round (\d+)/100, (\d+ s|\d+ min \d\d s) elapsed, (?:[\d,]+|\?) rounds/s, about (.+) left$")
    assert all(pattern.match(line) for line in lines), lines
    assert pattern.match(lines[-1]).group(3) == "0 s"


def test_durations_read_naturally():
    assert [runner._duration(s) for s in (4.4, 65, 3725, float("inf"))] == ["4 s", "1 min 05 s", "1 h 02 min", "?"]


def test_a_slow_run_also_reports_every_so_many_seconds(capsys, monkeypatch):
    """Between tenths of a long run a line comes at least every ``every`` seconds, so a job whose
    tenths take many minutes still shows as running (`cli progress --recent`)."""
    clock = iter(range(0, 10_000, 7))                  # 7 s per round on a fake clock
    monkeypatch.setattr("time.perf_counter", lambda: float(next(clock)))
    progress = runner._progress([0], every=60.0)
    for t in range(1, 31):                             # 30 rounds of a 1,000-round run: no tenth reached
        progress(t, 1000)
    lines = capsys.readouterr().err.splitlines()
    assert [int(re.search(r"round (\d+)/", ln).group(1)) for ln in lines] == [9, 18, 27]


def test_a_resumed_run_rates_only_the_rounds_it_played(capsys, monkeypatch):
    """Resumed after round 500 of 1,000 at 2 rounds/s: the rate is 2 (not the 500 rounds before the
    resume over its own seconds), and at round 600 the 400 rounds left take about 3 min 20 s."""
    clock = iter(np.arange(0.0, 10_000.0, 0.5))        # 0.5 s per round on a fake clock
    monkeypatch.setattr("time.perf_counter", lambda: float(next(clock)))
    progress = runner._progress([0], every=1e9)
    for t in range(501, 601):
        progress(t, 1000, 500)
    line = capsys.readouterr().err.splitlines()[-1]
    assert re.search(r"round 600/1000, 50 s elapsed, 2 rounds/s, about 3 min 20 s left$", line), line
