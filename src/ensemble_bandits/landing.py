"""The landing page of the HTML report (``snakemake --report``): the verdicts first.  reStructuredText
that workflow/report/workflow.rst shows on the report's first page: the counted tally (as REPORT.md
opens), a table per paper, each finding not reproduced or inconclusive with its cause, and where the
full report is."""
from __future__ import annotations

from .findings import VERDICTS, counted, finding_cause, finding_status, findings, tally, tally_counts
from .papers import CITATIONS as PAPERS
from .report import ICON, REDUCED_CAUSES, _short, rst_escape


def _table(rows: list) -> list:
    """An RST list-table of ``rows`` (the first is the header)."""
    out = [".. list-table::", "   :header-rows: 1", ""]
    for row in rows:
        out += [f"   * - {row[0]}", *(f"     - {cell}" for cell in row[1:])]
    return out + [""]


def landing_rst(scale: str, figures: list, not_built=()) -> str:
    """The landing page for the records ``figures`` (with their registry notes) at ``scale``."""
    # the tally as REPORT.md opens (its markdown *emphasis* is reST emphasis too)
    out = [f"Verdicts at scale ``{scale}``", "=" * (len(scale) + 22), "", tally(figures, scale), ""]
    rows = [["paper", "claims", *VERDICTS]]
    for paper, name in PAPERS.items():
        mine = [f for f in figures if f["paper"] == paper]
        if mine:
            counts = tally_counts(mine, scale)["counts"]
            rows.append([f"**{paper}** ({rst_escape(name.split(',')[0])})", str(sum(counts.values())),
                         *(str(counts[k]) for k in VERDICTS)])
    out += _table(rows) if len(rows) > 1 else []
    missed = []
    for rows_ in findings(figures).values():
        status, cause = finding_status(rows_), finding_cause(rows_)
        substitute = (cause or {}).get("kind") == "substitute"      # not counted as a failure (tally)
        if counted(rows_) and status in ("not reproduced", "inconclusive") and not substitute:
            missed.append((rows_[0], status, cause))
    if missed:
        out += ["Not reproduced or inconclusive, with the cause", "-" * 46, ""]
        out += [REDUCED_CAUSES, ""] if scale != "paper" else []
        for (fid, claim), status, cause in missed:
            why = (f" — {rst_escape(cause['kind'])}: {rst_escape(_short(cause['why']))}" if cause
                   else " — no cause stated")
            out.append(f"- ``{fid}`` · {rst_escape(claim['id'])}: {ICON[status]}{why}")
        out.append("")
    out += [f"The full report, with every claim, its numbers and its readings: ``figures/{scale}/REPORT.md`` (written "
            f"by ``all`` at this scale) in the "
            f"repository. Each figure (in the sections of the menu) shows the paper's caption and its claims with "
            f"their verdicts.", ""]
    if not_built:
        out += [f"Not built at this scale, so not shown: {rst_escape(', '.join(not_built))}.", ""]
    return "\n".join(out)
