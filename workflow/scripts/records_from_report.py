"""One-off migration: split a REPORT.md written by the workflow before records existed into one
record per figure (figures/<scale>/records/<id>.json), so that a later `reuse_records` run can
assemble a report with them without rerunning those figures.

    python workflow/scripts/records_from_report.py figures/paper/REPORT.md

Each record's ``run`` is the provenance line of that REPORT.md (commit, time, machine, versions).
Nothing is written unless the records render the same report again, byte for byte apart from the
provenance line (what the renderer writes today: ensemble_bandits.report.report_markdown).  An id
that already has a record is left as it is.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from ensemble_bandits import paths, report

PROVENANCE = re.compile(r"Provenance: commit (?P<commit>\S+), scale `(?P<scale>\w+)`, generated (?P<generated>.+? UTC), "
                        r"machine (?P<machine>.+?); (?P<package>ensemble_bandits \S+) \(algorithms v(?P<algorithms>\w+)\); "
                        r"(?P<packages>.+)\.$")
STATUS = {icon: status for status, icon in report.ICON.items()}
ORIGIN = re.compile(r" \*\(the finding of \S+, counted once\)\*$")
CELL_SPLIT = re.compile(r"(?<!\\) \| ")


def _unescape(text: str) -> str:
    return text.replace("\\|", "|")


def parse_claim(row: str) -> dict:
    """``| id: text *note* | icon | numbers |`` -> a claim result as the claims job writes it."""
    first, icon, numbers = CELL_SPLIT.split(row[2:-2])
    cid, _, rest = first.partition(": ")
    rest = _unescape(ORIGIN.sub("", rest))
    note = ""
    if rest.endswith("*"):
        start = rest.rfind(" *", 0, len(rest) - 1)
        rest, note = rest[:start], rest[start + 2:-1]
    if rest.startswith("“") and rest.endswith("”"):
        source, quote = "verbatim", rest[1:-1]
    else:
        tag, _, quote = rest.partition(" ")
        source = {v: k for k, v in report.SOURCE_TAG.items()}[tag]
    return {"id": cid, "quote": quote, "source": source, "status": STATUS[icon], "numbers": _unescape(numbers),
            "note": note}


def parse_report(text: str) -> tuple[str, dict, list]:
    lines = text.splitlines()
    run = PROVENANCE.match(lines[2])
    if not run:
        raise SystemExit(f"no provenance line in the report: {lines[2][:80]!r}")
    info = {"commit": run["commit"], "generated": run["generated"], "machine": run["machine"],
            "algorithms": run["algorithms"], "versions": f"{run['package']}; {run['packages']}"}
    records, paper, fig = [], None, None
    for line in lines:
        if m := re.match(r"## (\w+) — ", line):
            paper = m[1]
        elif m := re.match(r"### (\S+) — (.*)$", line):
            fig = {"id": m[1], "paper": paper, "title": m[2], "seeds": None, "horizon": None, "choices": "",
                   "claims": [], "png": None, "run": info, "source": "split from the REPORT.md of this run "
                   "(workflow/scripts/records_from_report.py)"}
            records.append(fig)
        elif fig is None:
            continue
        elif m := re.match(r"!\[\S+\]\((\S+)\)$", line):
            fig["png"] = m[1]
        elif m := re.match(r"\*Size at this scale:\* (\d+) seeds × (\d+) rounds\.$", line):
            fig["seeds"], fig["horizon"] = int(m[1]), int(m[2])
        elif line.startswith("*Choices where the paper is silent or ambiguous:* "):
            fig["choices"] = line.split(":* ", 1)[1]
        elif line.startswith("| ") and not line.startswith(("| claim |", "|---")):
            fig["claims"].append(parse_claim(line))
    return run["scale"], info, records


def main(path: str) -> None:
    text = Path(path).read_text(encoding="utf-8")
    scale, info, records = parse_report(text)
    skipped = re.search(r"^Not run at this scale \(left out with `skip`; see README, Scales\): (.*)\.$", text, re.M)
    again = report.report_markdown(scale, records, skipped=skipped[1].split(", ") if skipped else ()).split("\n")
    lines = text.split("\n")
    again[2] = lines[2]                                      # the provenance line: today's, not the run's
    if again != lines:
        diff = next((i for i, (a, b) in enumerate(zip(again, lines)) if a != b), min(len(again), len(lines)))
        raise SystemExit(f"the records do not render {path} again (first difference at line {diff + 1}): nothing written")
    for rec in records:
        out = Path(paths.record_file(scale, rec["id"]))
        if out.exists():
            print(f"{out}: exists, left as it is")
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        report.write_record(rec, out)
        print(f"{out}: {len(rec['claims'])} claims")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
