"""What the simulate jobs' logs say: the last line a job writes (:func:`done_line`: its wall and CPU
seconds and peak memory) read back per run file (:class:`JobLogs`, a shared-pass job's time shared
among its cells), the timings tables of ``cli timings`` and the jobs running now (``cli progress``)."""
from __future__ import annotations

import os
import re
import sys
import time

from . import costs, paths, registry

# a simulate job's last log line: its wall seconds and (newer logs) its process CPU seconds and peak
# resident memory
DONE_IN = re.compile(r"done in ([0-9.]+) s(?: \(CPU ([0-9.]+) s(?:, peak ([0-9.]+) MB)?\))?")
RUN_FILE = re.compile(r"runs/(\w+)/seeds-(\d+)-(\d+)")  # a run file's cell key and seed block


def peak_rss_mb() -> float | None:
    """This process's peak resident memory in MB (None where the platform does not say)."""
    try:
        import resource
    except ImportError:                                     # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10     # bytes on macOS, KiB on Linux


PARTIAL = "; this run only"  # follows the numbers of a resumed job whose earlier runs' time is not known


def done_line(t0: float, c0: float, earlier=(0.0, 0.0)) -> str:
    """A simulate job's last log line: wall seconds since ``t0``, this process's CPU seconds since
    ``c0`` (every thread: a torch job on two threads uses up to twice its wall time) and its peak
    resident memory.  ``earlier``: (wall, CPU) seconds of the job's earlier runs (a job resumed from
    its checkpoint, :attr:`checkpoint.Checkpoint.spent`), counted in; None when they are not known,
    which the line says (and :func:`logged_seconds` then reads no time)."""
    peak = peak_rss_mb()
    mem = f", peak {peak:.0f} MB" if peak is not None else ""
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if earlier is None:
        return (f"done in {wall:.1f} s (CPU {cpu:.1f} s{mem}){PARTIAL}: resumed from a saved state that does "
                "not keep the time of the runs before")
    if earlier == (0.0, 0.0):
        return f"done in {wall:.1f} s (CPU {cpu:.1f} s{mem})"
    return (f"done in {wall + earlier[0]:.1f} s (CPU {cpu + earlier[1]:.1f} s{mem}); of which this run {wall:.1f} s "
            f"(CPU {cpu:.1f} s), the job's earlier runs (to their last saved state) {earlier[0]:.1f} s (CPU "
            f"{earlier[1]:.1f} s)")


def logged_seconds(log):
    """(wall, CPU or None, peak MB or None) seconds of the finished job whose log is ``log``, from
    its "done in" line; None without a log, without that line, or when the line covers only the
    last run of a resumed job (:data:`PARTIAL`)."""
    if not os.path.exists(log):
        return None
    hit = DONE_IN.search(open(log, errors="replace").read())
    if hit is None or hit.string[hit.end():].startswith(PARTIAL):
        return None
    return _shared(hit, 1)


class JobLogs:
    """Wall and CPU seconds of a run file's simulate job from its log.  A shared-pass job logs once
    for its group: each of its cells counts an equal share.  Its log names its cells (`cells:` line);
    older logs are matched to the groups of all figures together."""

    def __init__(self, scale: str, figs: dict, group_size: int):
        self.scale = scale
        self.group_of = {key: g for g in registry.shared_groups(list(figs.values()), group_size) for key in g["keys"]}
        self.shares = group_log_shares(paths.simulate_log(scale))

    def seconds(self, key: str, start, end):
        """(wall, CPU or None) seconds of the job of ``key``'s seeds [start, end) (a share of a
        shared-pass job), or None where it has no log."""
        start, end = str(start), str(end)
        if (key, start, end) in self.shares:
            return self.shares[key, start, end]
        share, log = 1, paths.simulate_log(self.scale, key, start, end)
        if not os.path.exists(log) and key in self.group_of:
            share = len(self.group_of[key]["keys"])
            log = paths.simulate_log(self.scale, f"group-{self.group_of[key]['id']}", start, end)
        found = logged_seconds(log)
        return None if found is None else (found[0] / share, None if found[1] is None else found[1] / share, found[2])


def _shared(hit, share: int):
    """(wall, CPU or None, peak MB or None) of a DONE_IN match, the seconds divided among ``share``
    cells (the peak is the job's)."""
    return (float(hit.group(1)) / share, float(hit.group(2)) / share if hit.group(2) else None,
            float(hit.group(3)) if hit.group(3) else None)


def group_log_shares(log_dir) -> dict:
    """(key, start, end) -> (wall, CPU or None) seconds, an equal share of its shared-pass job, from
    the group logs that name their cells (a `cells:` line before `done in ... s`)."""
    shares = {}
    for name in sorted(os.listdir(log_dir)):
        block = re.fullmatch(r"group-\w+-(\d+)-(\d+)\.log", name)
        if not block:
            continue
        text = open(os.path.join(log_dir, name)).read()
        keys, done = re.search(r"^cells: (.+)$", text, re.M), DONE_IN.search(text)
        if keys and done:
            keys = keys.group(1).split()
            for key in keys:
                shares[key, block.group(1), block.group(2)] = _shared(done, len(keys))
    return shares


def timings_per_cell(figs: list, per_job: int, logged: JobLogs) -> None:
    """One line per cell with logged jobs: measured wall and CPU seconds beside the cost model's
    (costs.cell_cost_seconds, as part of a shared pass where it is one; a model of wall seconds on a
    2-core machine) for the same jobs, and the ratio of wall to model."""
    print(f"{'figure':16s} {'cell':12s} {'agent':22s} {'env':22s} {'jobs':>5s} {'wall s':>9s} {'CPU s':>9s} "
          f"{'model s':>9s} {'ratio':>6s}")
    tot_m, tot_e = 0.0, 0.0
    for fig, s in registry.unique_series(figs):
        cell, shared = s["cell"], s["key"] in logged.group_of
        secs, model = [], 0.0
        for a, b in registry.series_blocks(s, per_job):
            t = logged.seconds(s["key"], a, b)
            if t is not None:
                secs.append(t)
                model += costs.cell_cost_seconds(cell, b - a, shared=shared)
        if not secs:
            continue
        agent = cell.get("agent", {}).get("name", cell.get("experiment", "?"))
        agent += f" M={cell['agent']['M']}" if "M" in cell.get("agent", {}) else ""
        wall = sum(w for w, _c, _m in secs)
        tot_m, tot_e = tot_m + wall, tot_e + model
        print(f"{fig['id']:16s} {s['key']:12s} {agent:22s} {cell.get('env', {}).get('name', '-'):22s} {len(secs):5d} "
              f"{wall:9.1f} {_cpu_text(_cpu_sum(secs)):>9s} {model:9.1f} {wall / model:6.2f}")
    if tot_e:
        print(f"{'total':16s} {'':12s} {'':22s} {'':22s} {'':5s} {tot_m:9.1f} {'':>9s} {tot_e:9.1f} "
              f"{tot_m / tot_e:6.2f}  (each cell once)")


def timings_table(figs: dict, ids: list, per_job: int, logged: JobLogs, scale: str) -> None:
    """One line per figure of ``ids`` (``figs``: {id: resolved figure}): its cells, simulate jobs, those
    logged, and their wall and CPU seconds and largest peak memory (``cli timings``)."""
    print(f"{'figure':16s} {'cells':>6s} {'jobs':>6s} {'logged':>7s} {'wall s':>9s} {'CPU s':>9s} {'peak MB':>8s}")
    grand, any_logged = [0.0, 0.0], False
    for fid in ids:
        fig = figs[fid]
        runs = registry.figure_runs(fig, per_job)
        found = [t for t in (logged.seconds(*RUN_FILE.search(f).groups()) for f in runs) if t is not None]
        wall, cpu = sum(w for w, _c, _m in found), _cpu_sum(found)
        grand[0] += wall
        grand[1] += cpu if cpu is not None else 0.0
        any_logged = any_logged or bool(found)
        print(f"{fid:16s} {len({s['key'] for s in fig['series']}):6d} {len(runs):6d} {len(found):7d} {wall:9.1f} "
              f"{_cpu_text(cpu):>9s} {_peak_text(found):>8s}")
    print(f"{'total':16s} {'':6s} {'':6s} {'':7s} {grand[0]:9.1f} {grand[1]:9.1f}  (cells shared by figures count "
          f"in each; CPU: every thread of the job's process; peak: the largest job's resident memory; '-' where "
          f"the logs predate them)")
    if not any_logged:
        print(f"(none of these figures' simulations has run at scale {scale!r} here yet)")


class NoTimingsError(LookupError):
    """No simulation has run at the scale here: nothing to time."""


def timings_report(scale: str, project: tuple, ids=(), seeds_per_job: int | None = None,
                   per_cell: bool = False) -> None:
    """``cli timings``: the wall and CPU seconds and peak memory of the simulate jobs of each figure of
    ``ids`` (default all), read from their logs (:func:`timings_table`; ``per_cell``:
    :func:`timings_per_cell`, beside the cost model).  ``project``: (configfile, config_dir, schema,
    scales_json) of :func:`registry.load_project`, read once there are logs; a NoTimingsError saying
    where timings are when no simulation has run here."""
    logs = paths.simulate_log(scale)
    if not (os.path.isdir(logs) and os.listdir(logs)):
        page = os.path.join("docs", f"timings-{scale}.md")
        committed = (f" The timings measured by the run that made the committed figures/{scale}/ results are in "
                     f"{page}." if os.path.isfile(page) else "")
        raise NoTimingsError(f"no timings: no simulation has run at scale {scale!r} in {os.getcwd()} (no logs in "
                             f"{logs}/).{committed} For what a run would cost here: `ensemble-bandits estimate "
                             f"--scale {scale}` (a cost model; runs nothing); after a run, this command reads its logs.")
    config, entries = registry.load_project(*project)
    per_job = seeds_per_job or config["seeds_per_job"]
    ids = registry.select_ids(ids, entries)
    figs = {fid: registry.resolve(entries[fid], scale, config["scales"]) for fid in sorted(entries)}
    logged = JobLogs(scale, figs, config.get("shared_pass_group", 64))
    if per_cell:
        return timings_per_cell([figs[fid] for fid in ids], per_job, logged)
    timings_table(figs, ids, per_job, logged, scale)


def timings_page(page: str, scale: str, command: str, report) -> None:
    """What ``report()`` (:func:`timings_report`) prints, also written as the generated markdown page
    ``page`` under its ``command`` (:mod:`pages`)."""
    from . import pages

    body = pages.captured(report)
    pages.write_page(page, f"Simulation timings at scale {scale}", command,
                     f"Read from the simulate jobs' logs under results/{scale}/logs/simulate on the "
                     f"machine that ran them: wall and CPU seconds (CPU: every thread of the job's process) "
                     f"and the largest job's peak resident memory.", body, measured_here=False)


def running_jobs(scale: str, recent: float) -> list:
    """(job, its last progress line) of the simulate jobs at ``scale`` running now: a log without its
    "done in" line, written to in the last ``recent`` seconds (``cli progress``)."""
    logs = paths.simulate_log(scale)
    now, running = time.time(), []
    if os.path.isdir(logs):
        for name in sorted(os.listdir(logs)):
            path = os.path.join(logs, name)
            if now - os.path.getmtime(path) > recent:
                continue
            text = open(path, errors="replace").read()
            if not DONE_IN.search(text):
                lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
                running.append((name[:-len(".log")], lines[-1] if lines else "(started)"))
    return running


def _cpu_sum(found):
    """The CPU seconds of logged jobs, or None when any log lacks them (written before CPU timing)."""
    return None if any(c is None for _w, c, _m in found) else sum(c for _w, c, _m in found)


def _peak_text(found) -> str:
    """The largest peak memory of logged jobs, "-" where no log states one."""
    peaks = [m for _w, _c, m in found if m is not None]
    return f"{max(peaks):.0f}" if peaks else "-"


def _cpu_text(cpu) -> str:
    return "-" if cpu is None else f"{cpu:.1f}"
