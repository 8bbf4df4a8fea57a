"""A simulation job's log says how far it is: round, elapsed time, rate and time left."""
import re

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
