"""The README's generated blocks: the headline (the counted tally of the committed paper-scale
report, per paper, linking it) and the measured durations (of the Quick start's commands,
:mod:`.quickstart`, and of paper-scale figures) and what a paper-scale ``all`` costs in a fresh clone
(the cost model, :func:`cost_recipe`).  Each sits in README.md between an opening and a
closing marker and is written only by :func:`refresh`: the headline and the costs when the paper-scale
REPORT.md is published (``cli publish``), the durations when ``ensemble-bandits timings --scale paper --page
docs/timings-paper.md`` or ``tools/measure_quickstart.py`` writes its page, and all of them by ``python -m
ensemble_bandits.readme``.  tests/test_docs.py checks that the README's blocks are what
these functions make of the committed files, so the README never states a count or a time by hand."""
from __future__ import annotations

import contextlib
import re
import sys
from pathlib import Path

from . import quickstart

REPORT = "figures/paper/REPORT.md"
TIMINGS = "docs/timings-paper.md"
VERDICTS = ("reproduced", "not reproduced", "inconclusive")
BLOCKS = {
    "headline": ("<!-- headline: generated from figures/paper/REPORT.md (ensemble_bandits.readme); do not edit -->",
                 "<!-- end of headline -->"),
    "durations": ("<!-- durations: generated from docs/timings-quickstart.md and docs/timings-paper.md "
                  "(ensemble_bandits.readme); do not edit -->",
                  "<!-- end of durations -->"),
    "costs": ("<!-- costs: generated from the registry and the committed archives by the cost model "
              "(ensemble_bandits.readme); do not edit -->",
              "<!-- end of costs -->"),
}
SKIP_EXAMPLE = "[glmes-fig4b,glmes-fig5*]"     # the README's example of leaving the largest figures out
_COUNTS = re.compile(r"(\d+) claims checked: (\d+) reproduced, (\d+) not reproduced, (\d+) inconclusive\.")
_PAPER = re.compile(r"^- \*\*([a-z]+)\*\*: (\d+) checked: (\d+) reproduced, (\d+) not reproduced, (\d+) inconclusive$",
                    re.M)


def headline(report_text: str) -> str:
    """The README's headline from a REPORT.md's tally (its first count and its line per paper)."""
    m = _COUNTS.search(report_text)
    if m is None:
        raise ValueError(f"{REPORT} holds no tally ('N claims checked: ...')")
    total, *counts = (int(g) for g in m.groups())
    out = [f"**At paper scale, {total} of the papers' claims are checked: "
           + ", ".join(f"{n} {v}" for n, v in zip(counts, VERDICTS))
           + f"** ([{REPORT}]({REPORT}): each claim with its verdict, the numbers behind it and, where it is not "
           "reproduced or inconclusive, the cause). Each paper finding counts once; claims designed here, "
           "rows that only report numbers and findings resting on a substitute setting are not counted.", ""]
    skipped = re.search(r"^Not run at this scale \(left out with `skip`\): (.*)\.$", report_text, re.M)
    if skipped:
        n = len(skipped.group(1).split(", "))
        out[0] += (f" {n} figure ids are not run at paper scale yet (GPU work or many CPU-hours; the report lists "
                   f"them); the default scale covers every id.")
    rows = _PAPER.findall(report_text)
    if rows:
        out += ["| paper | claims checked | " + " | ".join(VERDICTS) + " |", "|---|---|---|---|---|"]
        out += [f"| `{paper}-` | {n} | {a} | {b} | {c} |" for paper, n, a, b, c in rows]
    return "\n".join(out)


def _timings_rows(page_text: str) -> dict:
    """{figure: (jobs, logged, wall s)} of a timings page's table."""
    rows = {}
    for line in page_text.splitlines():
        parts = line.split()
        if len(parts) >= 6 and re.fullmatch(r"[a-z]+-[\w-]+", parts[0]) and parts[1].isdigit():
            rows[parts[0]] = (int(parts[2]), int(parts[3]), float(parts[4]))
    if not rows:
        raise ValueError(f"{TIMINGS} holds no timings table")
    return rows


def durations(page_text: str, example: str = "phe-fig1") -> str:
    """The README's measured durations of one figure at paper scale, from a timings page: the
    README's example figure and the range over the figures whose every simulation job was logged."""
    rows = _timings_rows(page_text)
    whole = {f: wall for f, (jobs, logged, wall) in rows.items() if jobs and logged == jobs}
    lo, hi = min(whole, key=whole.get), max(whole, key=whole.get)
    text = (f"One figure at paper scale, as measured ([{TIMINGS}]({TIMINGS}), the simulation jobs' wall time on a "
            f"2-core machine): ")
    if example in whole:
        text += f"{example} {quickstart.duration(whole[example])}; "
    return text + (f"from {quickstart.duration(whole[lo])} ({lo}) to {quickstart.duration(whole[hi])} ({hi}) over the "
                   f"{len(whole)} figures whose every job was logged. A figure redrawn from its committed archive "
                   f"simulates nothing.")


def _fresh_clone_work(skip: list) -> tuple:
    """(work left, figures taken from their committed archives, [(figure, CPU s)] of those that simulate,
    costliest first) of a paper-scale ``all`` in a fresh clone of the project in the working directory: no
    run files present (costs.work_left, as ``estimate``, ``progress`` and Snakemake's notice count)."""
    from . import costs
    from .progress import run_plan

    plan = run_plan(("config/config.yaml", "config", None, None), "paper", skip=skip)
    left = costs.work_left(plan["figs"], plan["per_job"], plan["covered"], lambda p: False, plan["groups"],
                           plan["current"])
    return left, len(plan["current"]), costs.largest(plan["figs"], left, plan["per_job"])


def cost_recipe() -> str:
    """The README's sentence on what a paper-scale ``all`` costs in a fresh clone, with and without
    the largest figures (:data:`SKIP_EXAMPLE`), from the cost model."""
    from .costs import format_cpu_time as cpu

    left, archived, own = _fresh_clone_work([])
    part, _, _ = _fresh_clone_work(SKIP_EXAMPLE.strip("[]").split(","))
    top = own[:4]
    return (f"In a fresh clone, paper-scale `all` rebuilds the {archived} figures whose archives are committed "
            f"from those archives, without simulating, and simulates {len(own)} others: by the cost model about "
            f"{cpu(left['seconds'])} of CPU time in {left['jobs']} simulation jobs, the largest "
            + ", ".join(f"{fid} {cpu(sec)}" for fid, sec in top)
            + f"; `skip='{SKIP_EXAMPLE}'` " + (f"leaves about {cpu(part['seconds'])} in {part['jobs']} jobs." if part["jobs"]
                                              else "leaves nothing to simulate."))


def generated(name: str, root=".") -> str:
    """What block ``name`` should hold, made from the committed files under ``root``."""
    root = Path(root)
    if name == "headline":
        return headline((root / REPORT).read_text(encoding="utf-8"))
    if name == "costs":
        with contextlib.chdir(root):
            return cost_recipe()
    pages = [root / quickstart.PAGE, root / TIMINGS]
    quick, figures = (p.read_text(encoding="utf-8") if p.exists() else None for p in pages)
    text = quickstart.sentence((root / "README.md").read_text(encoding="utf-8"), quick)
    return text + (" " + durations(figures) if figures else "")


def timings_page(page: str, scale: str, command: str, report) -> None:
    """joblogs.timings_page, then the README's measured durations refreshed when ``page`` is the paper
    scale's (:data:`TIMINGS`)."""
    import os

    from .joblogs import timings_page as write

    write(page, scale, command, report)
    if os.path.normpath(page) == os.path.normpath(TIMINGS):
        refresh(("durations",))


def block(readme_text: str, name: str) -> str | None:
    """The text between block ``name``'s markers in a README (None when it has none)."""
    start, end = BLOCKS[name]
    m = re.search(re.escape(start) + r"\n(.*?)\n" + re.escape(end), readme_text, re.S)
    return m.group(1) if m else None


def refresh(names=tuple(BLOCKS), root=".", readme="README.md") -> list:
    """Rewrite the README's blocks ``names`` from the committed files; returns the names changed.  A
    README without a block's markers is left as it is."""
    from .atomic import write_text_atomic

    path = Path(root) / readme
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    changed = []
    for name in names:
        old = block(text, name)
        if old is None:
            continue
        new = generated(name, root)
        if old == new:
            continue
        start, end = BLOCKS[name]
        text = text.replace(f"{start}\n{old}\n{end}", f"{start}\n{new}\n{end}")
        changed.append(name)
    if changed:
        write_text_atomic(text, path)
    return changed


if __name__ == "__main__":      # python -m ensemble_bandits.readme [headline|durations ...]
    done = refresh(tuple(sys.argv[1:]) or tuple(BLOCKS))
    print(f"README.md: {', '.join(done) + ' rewritten' if done else 'up to date'}", file=sys.stderr)
