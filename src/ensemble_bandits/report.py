"""Claims of one figure (JSON + reStructuredText for the Snakemake report) and REPORT.md.

REPORT.md is assembled from records (:mod:`records`), so a paper-scale report can combine ids run in
different sessions (``reuse_records``): a section taken from an earlier run names that run; its
tally of findings is :mod:`findings`.
"""
from __future__ import annotations

import json
import os
import re
import sys

from . import paths, registry
from .claims.core import NEVER
from .atomic import write_text_atomic
from .findings import (classify, counted, earlier_mark, finding_cause, finding_key, finding_status, findings,
                       revised, shared_evidence, tally, weak_evidence)
from .papers import CITATIONS as PAPERS, paper_figure
from .records import provenance
from .redraw import previous_record, redecided_line, redrawn_record, unchanged_report
from .report_text import _with_threshold, readable, rule_bounds, summary_line
from .revisions import revised_text, revision_cell

ICON = {"reproduced": "✅ reproduced", "not reproduced": "❌ not reproduced", "inconclusive": "❔ inconclusive",
        "reported": "📏 reported"}
SOURCE_TAG = {"paraphrase": "(paraphrase)", "designed": "(designed)"}   # verbatim quotes are in quotation marks
HOW_TO_READ = (
    "How to read it. A claim in quotation marks is the paper's own sentence (symbols written in ASCII, "
    "\"...\" for words left out, [brackets] for words of ours); one marked *(paraphrase)* restates a formula, "
    "table or sentence of the paper in our words; one marked *(designed)* is a statement of ours that tests the "
    "paper. The Lee & Oh paper has no experiments: every lines- experiment is designed, and its note says how the "
    "theory is read. Each note states the reading, margins and thresholds, fixed in the registry; where a "
    "claim's rule was changed after its paper-scale numbers were seen, the finding is marked *revised* (see "
    "\"Revised rules\" below). Every paper sentence (quoted or paraphrased) counts, whatever its verdict; only "
    "*(designed)* statements of ours and transpositions of a claim to another panel are shown without being "
    "counted.")
HOW_DECIDED = (
    "How it is decided. Simulated comparisons are paired across seeds (the same instance and reward noise for "
    "every method). Each decision is a one-sided test at 2.5 %, i.e. it reads one edge of the 95 % interval "
    "shown: a Student-t interval of the mean difference (the mean is what the papers plot, and it decides unless a "
    "claim names another location); where regrets have heavy tails, the Hodges-Lehmann pseudo-median of the "
    "Wilcoxon signed-rank test, medians and the share of collapsed runs are shown beside it; Fieller's interval for a ratio of means; a bootstrap over seeds for a log-log slope. "
    "\"Similar\", \"comparable\" and \"analogous\" are equivalence tests: the whole interval inside the "
    "band. *Reproduced* needs positive evidence: every comparison of the claim decided for it. *Not reproduced*: "
    "at least one comparison decided against it, after Holm's correction over the claim's comparisons. Otherwise "
    "*inconclusive*, which includes a claim whose premise is undecided and a claim that gets another verdict on a "
    "second block of seeds. Closed-form and static-table checks are exact, Monte-Carlo table checks use the "
    "table's confidence bounds, and the timing ratios and the fit of the minimal ensemble size (derived tables) "
    "are decided on point estimates. *Reported*: numbers the spec asks for without a verdict, not counted. A rule "
    "changed after its paper-scale numbers were seen is a *revision*: the paper-scale report lists the findings so "
    "revised under *Revised rules*, next.")


HOW_CAUSES = (
    "Why a finding is not reproduced or inconclusive. Each such finding names one cause: *paper-error* (the "
    "paper's statement is wrong as written), *reading* (the verdict turns on a reading of an ambiguous sentence "
    "or on the paper's text against the authors' code; the other reading is run and its verdict shown beside), "
    "*underpowered* (the runs are too few to decide; the seeds that would decide it follow from the observed "
    "spread and the margin), *substitute* (the setting here stands in for one that cannot be had offline, so the "
    "verdict does not test the paper), *measurement* (what is measured here cannot test the claim) or *genuine* "
    "(not reproduced under the faithful configuration). A reading's verdict names its own cause beside it where the "
    "paper text's cause does not cover it (e.g. a claim reproduced under the paper text but not under a reading). "
    "A statistical claim measured on fewer than 5 seeds gets no verdict (\"not measured at this scale\").")

REDUCED_CAUSES = (
    "Causes are declared for the paper-scale verdicts (`figures/paper/REPORT.md`). This report is at a reduced "
    "scale (fewer seeds, shorter horizons, smaller grids): a finding that the paper scale decides may be "
    "inconclusive or decided otherwise here, and then shows *not stated*; a cause shown here explains the "
    "paper-scale verdict, not necessarily this one.")


def rst_escape(text: str) -> str:
    """Plain text safe inside reStructuredText (captions of the Snakemake report), on one line."""
    for ch in "\\*`|_":
        text = text.replace(ch, f"\\{ch}")
    return " ".join(text.split())


def claim_text(claim: dict) -> str:
    """A claim's sentence: in quotation marks when it is the paper's own, else tagged (paraphrase) or
    (designed)."""
    source = claim.get("source", "verbatim")
    return f"“{claim['quote']}”" if source == "verbatim" else f"{SOURCE_TAG[source]} {claim['quote']}"


def claims_rst(fid: str, results: list) -> str:
    """A figure's claims as the reST of its HTML-report caption: each claim's verdict (with the look
    that decided it, for a claim decided in planned looks), sentence and numbers, its cause where it
    has one (the registry's notes, :func:`with_registry_notes`) and the verdicts of its other readings."""
    from .plans import look_words

    if not results:
        return "*No quantitative claim is attached to this item.*\n"
    lines = ["**Claims** (status at this scale):", ""]
    for r in results:
        look = f" ({rst_escape(look_words(r))})" if r.get("look") else ""
        line = f"- **{r['status']}**{look} — {rst_escape(claim_text(r))} — {rst_escape(r['numbers'])}"
        if r.get("cause") and r["status"] in ("not reproduced", "inconclusive"):
            line += f" — *cause:* {_cause_rst(r['cause'])}"
        if r.get("weak") and r["status"] == "reproduced":
            line += f" — *weak evidence:* {rst_escape(r['weak'])}"
        for rd in r.get("readings", []):
            why = _reading_cause(r, rd) and (_cause_rst(rd["cause"]) if rd.get("cause") else "not stated")
            line += (f" ‖ *reading {rst_escape(rd['label'])}* ({rst_escape(rd['says'])}): **{rd['status']}** — "
                     f"{rst_escape(rd['numbers'])}" + (f" — *cause:* {why}" if why else ""))
        lines.append(line)
    return "\n".join(lines) + "\n"


def with_registry_notes(figures: list, entries: dict) -> list:
    """Records with each claim's ``cause``, its readings' causes (``reading_causes``) and ``finding`` as
    the registry states them now (they are the registry's account of a verdict, not a result of the
    run: a record written before a cause was declared shows it too).  A claim whose rule the registry
    has changed since the record was decided (its note, which states the rule, differs, or it now
    rests on a premise the record lacks) is marked ``earlier_rule``; the registry's claims the record
    lacks are listed in the figure's ``undecided`` (both only arise for a record not re-decided since,
    e.g. one without an archive)."""
    from .claims.evaluate import cause_of, claim_source

    out = []
    for f in figures:
        declared = {c["id"]: c for c in entries.get(f["id"], {}).get("claims", [])}
        have = {c["id"] for c in f["claims"]}
        claims = []
        for c in f["claims"]:
            c = {k: v for k, v in c.items() if k not in ("cause", "finding", "earlier_rule", "weak")}
            d = declared.get(c["id"], {})
            if "cause" in d:
                c["cause"] = cause_of(d["cause"])
            why = d.get("reading_causes", {})
            if c.get("readings"):
                c["readings"] = [{**{k: v for k, v in r.items() if k != "cause"},
                                  **({"cause": cause_of(why[r["reading"]])} if r.get("reading") in why else {})}
                                 for r in c["readings"]]
            if d.get("finding") is False:
                c["finding"] = False
            if d.get("weak"):
                c["weak"] = " ".join(d["weak"].split())
            if d:
                c["source"] = claim_source(d)[0]
                c["bounds"] = rule_bounds(d)
            premises = {chk.get("args", {}).get("claim") for chk in d.get("checks", []) if chk.get("fn") == "premise"}
            if d and (claim_source(d)[1] != c.get("note", "") or premises - have):
                c["earlier_rule"] = True
            claims.append(c)
        out.append({**f, "claims": claims, "undecided": [cid for cid in declared if cid not in have]})
    return out


def with_revisions(figures: list, notes: dict, added: dict | None = None, first: dict | None = None) -> list:
    """Records whose revised claims carry their ``revision`` note ({(figure id, claim id): note} of
    :func:`revisions.revision_notes`), whose claims added after their figure's first paper-scale
    verdict carry ``added_after`` (that verdict's commit, :func:`rules.added_later`), and every claim
    of the rule history its ``first_decided`` commit and date (:func:`rules.first_decided`)."""
    added, first = added or {}, first or {}

    def one(fid, c):
        key = (fid, c["id"])
        return {**c, **({"revision": notes[key]} if key in notes else {}),
                **({"added_after": added[key]} if key in added else {}),
                **({"first_decided": first[key]} if key in first else {})}

    return [{**f, "claims": [one(f["id"], c) for c in f["claims"]]} for f in figures]


def with_planned_looks(figures: list, notes: dict) -> list:
    """Records whose claims a sequential study plans carry ``next_look`` (a note of
    :func:`plans.planned_notes`, keyed by (figure id, claim id)): shown beside the verdict, which
    stays the record's own."""
    return [{**f, "claims": [{**c, "next_look": notes[f["id"], c["id"]]} if (f["id"], c["id"]) in notes else c
                             for c in f["claims"]]} for f in figures]


def _planned_text(c: dict, where: str = "") -> str:
    """``; next look planned: ...`` for a claim whose planned look has not run (``where``: the figure
    it runs in, when not the row's own), else ""."""
    from .plans import planned_text

    return f"; {where + ': ' if where else ''}{planned_text(c['next_look'])}" if c.get("next_look") else ""


def _look_text(c: dict) -> str:
    """``<br>decided at look k of K (n = ...)`` (or inconclusive (budget) / (futile)) for a claim its
    figure's planned looks decided (a record's claim with ``look``), else ""."""
    from .plans import look_words

    return f"<br>{look_words(c)}" if c.get("look") else ""


def _run_key(run: dict) -> str:
    """Runs of one commit are one code state (same seeds, same numbers): they group together."""
    return f"commit {run['commit']} (algorithms v{run['algorithms']})"


def natural_key(fid: str):
    """Sort key that puts fig2 before fig10 (and papers in report order)."""
    paper = fid.split("-")[0]
    parts = re.split(r"(\d+)", fid)
    return (list(PAPERS).index(paper) if paper in PAPERS else len(PAPERS),
            [int(p) if p.isdigit() else p for p in parts])


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _short(text: str, most: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= most else text[:most - 1] + "…"


def _readings_text(c: dict) -> str:
    others = c.get("readings", [])
    if not others:
        return ""
    return " · ".join([f"paper text: {c['status']}"]
                      + [f"{r['label']}: {r['status']}{_scope(r)}{_reading_kind(c, r)}" for r in others])


def _reading_kind(c: dict, r: dict) -> str:
    """`` — <cause kind>`` beside a reading's verdict in the summary (see :func:`_reading_cause`)."""
    why = _reading_cause(c, r)
    return "" if not why else f" — {r['cause']['kind']}" if r.get("cause") else " — cause not stated"


def _reading_cause(c: dict, r: dict) -> str:
    """The cause beside a reading's verdict: its ``reading_causes`` entry where the reading is not
    reproduced or inconclusive; *not stated* where it lacks one while the paper text's verdict is
    reproduced (a paper-text cause explains the readings it names otherwise)."""
    if r["status"] not in ("not reproduced", "inconclusive"):
        return ""
    if r.get("cause"):
        return _cause_line(r["cause"])
    return "" if c["status"] in ("not reproduced", "inconclusive") else "not stated"


def _scope(r: dict) -> str:
    """`` (<scope>; <n> seeds)`` beside a reading's verdict: the part of a claim's scope it decides
    (``partial``) and its seed count where it ran fewer seeds than the figure."""
    scope = [r["partial"]] if r.get("partial") else []
    scope += [f"{r['seeds']} seeds"] if r.get("seeds") else []
    return f" ({'; '.join(scope)})" if scope else ""


def _seeds_text(c: dict, seeds) -> str:
    """For an underpowered finding: the seeds that would decide it, beside those it was decided on
    (its look's where it was decided in looks, else the run's)."""
    need = c.get("seeds_to_decide")
    if c.get("cause", {}).get("kind") != "underpowered" or need is None:
        return ""
    if "look" in c:
        ran = f"; look {c['look']} of {c['looks']} has {c['n']}{' fresh' if 'first' in c else ''}"
    else:
        ran = f"; this run has {seeds}" if seeds else ""
    if need == NEVER:      # inf: in looks, an open comparison's estimate is on the claim's wrong side
        why = "an estimate lies on the wrong side of its bound" if "look" in c else "the estimate sits on a bound"
        return f" (at the effects seen no number of seeds would decide it: {why}{ran})"
    return f" (about {need} seeds would decide it{ran})"


def _cause_text(c: dict, seeds=None) -> str:
    if c["status"] not in ("not reproduced", "inconclusive"):
        return ""
    cause = c.get("cause")
    if not cause:
        return "not stated" + _planned_text(c)
    return _cause_line(cause) + _seeds_text(c, seeds) + _planned_text(c)


def _cause_line(cause: dict) -> str:
    return f"**{cause['kind']}**: {cause['why']}"


def _deciding_row(rows, status):
    """The row of a finding whose verdict decided it (the first with the finding's verdict)."""
    return next(((fid, c) for fid, c in rows if c["status"] == status), rows[0])


def verdict_text(rows, scale: str = "paper") -> str:
    """The summary's verdict: counted verdicts as such, and substitute, designed and reported findings
    named as what they are (not counted), with a revised finding's first-rule verdict beside."""
    kind, status = classify(rows, scale)
    now = finding_status(rows)
    if kind == "reported":
        text = ICON["reported"] + " (not counted)"
    elif kind == "substitute":
        text = f"🔁 substitute setting, not counted (its runs: {now})"
    elif kind == "designed":
        text = f"🛠 designed, not counted (its runs: {now})"
    else:
        text = ICON[now]
    if revised(rows):
        notes = [c["revision"] for _, c in rows if c.get("revision")]
        first = notes[0]["first"]
        text += f"<br>revised at {', '.join(dict.fromkeys(x for n in notes for x in n['commits']))}"
        text += f"; first rule ({notes[0]['first_commit']}): {first.get('status') or 'not known'}"
        if kind == "counted":
            text += f"; counted: **{status}**" + ("" if status == now or all(
                n["counted"]["rule"] == "first" for n in notes) else f" ({notes[0]['counted']['rule']})")
    weak = weak_evidence(rows) if kind == "counted" and status == "reproduced" else []
    if weak:
        text += "<br>⚠ weak evidence: " + "; ".join(weak)
    if all(c.get("added_after") for _, c in rows):       # every row of the finding came after the numbers
        text += "<br>added after the numbers"
    return text + earlier_mark(rows) + _since_text(rows, kind, scale)


def _since_text(rows, kind: str, scale: str) -> str:
    """A counted, unrevised paper-scale finding's line: the commit its rule was first decided at (every
    paper-scale claim has one: tests/test_rule_history.py)."""
    if kind != "counted" or scale != "paper" or revised(rows):
        return ""
    since = list(dict.fromkeys(c["first_decided"] for _, c in rows if c.get("first_decided")))
    return f"<br>rule unchanged since first decided at {', '.join(since)}" if since else ""


def _cause_rst(cause: dict) -> str:
    """:func:`_cause_line` in reStructuredText."""
    return f"**{rst_escape(cause['kind'])}**: {rst_escape(cause['why'])}"


def summary_table(figures: list, scale: str) -> list:
    """REPORT.md's first table: per finding, the paper's figure, verdict (the counted one, and a revised
    finding's first-rule verdict), cause, the number that decides it and the readings."""
    grouped = findings(figures)
    shared = shared_evidence(figures, scale)
    by_id = {f["id"]: f for f in figures}
    out = ["| finding | paper figure | verdict | cause | deciding number | readings |", "|---|---|---|---|---|---|"]
    for key, rows in sorted(grouped.items(), key=lambda kv: natural_key(kv[1][0][0])):
        fid, c = rows[0]
        status = finding_status(rows)
        dfid, dc = _deciding_row(rows, status)
        cause = finding_cause(rows) if status in ("not reproduced", "inconclusive") else None
        cause_text = "" if status not in ("not reproduced", "inconclusive") else (
            f"{cause['kind']}: {summary_line(cause['why'], dfid)}" if cause else "not stated")
        if cause:
            cause_text += _seeds_text({**c, "cause": cause}, by_id[fid].get("seeds"))
        cause_text += "".join(_planned_text(x, "" if f == fid else f) for f, x in rows)
        deciding = readable(_short(_with_threshold(dc.get("decisive") or dc["numbers"], dc["numbers"],
                                                   dc.get("bounds")), 220))
        if len(rows) > 1 and dfid != fid:
            deciding = f"{dfid}: {deciding}"
        link = f"[{fid} · {c['id']}](#{fid})"
        verdict = verdict_text(rows, scale) + _look_text(dc) + (
            f"<br>same runs as {', '.join(shared[key])}" if key in shared else "")
        out.append(f"| {link} | {_cell(paper_figure(by_id[fid]))} | {_cell(verdict)} | "
                   f"{_cell(cause_text)} | {_cell(deciding)} | {_cell(_readings_text(c))} |")
    return out


def table_body(markdown: str) -> list:
    """The pipe-table lines of a table figure's markdown (its title and caption are in the section)."""
    return [line for line in markdown.splitlines() if line.startswith("|")]


def report_markdown(scale: str, figures: list, skipped=(), archived=None, tables=None) -> str:
    """``figures``: records (dicts with id, paper, title, seeds, horizon, choices, claims, png and
    ``run``, the provenance of their run).  Records of several runs (``reuse_records``): the
    header counts the figures of each commit and each section names its run.  ``archived``: the ids
    whose per-seed archive is committed (None: not tracked at this scale); a simulated figure
    without one is marked "no archive"."""
    figures = sorted(figures, key=lambda f: natural_key(f["id"]))
    first = {key: rows[0][0] for key, rows in findings(figures).items()}
    runs = {}
    for f in figures:
        runs.setdefault(_run_key(f["run"]), []).append(f["id"])
    out = [f"# Replication report — scale `{scale}`", "", provenance(scale), "", tally(figures, scale), ""]
    if len(runs) > 1:
        counts = "; ".join(f"{key}: {len(ids)} figure{'s' if len(ids) > 1 else ''}" for key, ids in runs.items())
        out += [f"Assembled from the records of runs at {len(runs)} commits (`figures/{scale}/records/`, "
                f"`reuse_records`; each section names its run): {counts}.", ""]
    if skipped:
        out += [f"Not run at this scale (left out with `skip`): {', '.join(skipped)}.", ""]
    unarchived = [f["id"] for f in figures if archived is not None and f.get("seeds") and f["id"] not in archived]
    if unarchived:
        out += [f"No archive (the per-seed data of the run was not kept, so these figures cannot be redrawn or "
                f"re-decided without rerunning them): {', '.join(unarchived)}.", ""]
    earlier = [f"{f['id']} · {c['id']}" for f in figures for c in f["claims"] if c.get("earlier_rule")]
    if earlier:
        out += [f"Decided under an earlier rule (the registry has changed the claim's rule since this record was "
                f"decided; marked \"earlier rule\"; it is decided again at its figure's next paper run): "
                f"{', '.join(earlier)}.", ""]
    undecided = [f"{f['id']} · {cid}" for f in figures for cid in f.get("undecided", [])]
    if undecided:
        out += [f"Not decided yet (claims added to the registry after the record was decided; decided at the "
                f"figure's next paper run): {', '.join(undecided)}.", ""]
    out += ["## Summary", "", *summary_table(figures, scale), "", "## Contents", ""]
    for paper in PAPERS:
        ids = [f["id"] for f in figures if f["paper"] == paper]
        if ids:
            out.append(f"- **{paper}** ({PAPERS[paper]}): " + ", ".join(f"[{i}](#{i})" for i in ids))
    out += ["", HOW_TO_READ, "", HOW_DECIDED, ""]
    if revised_text(figures):
        out += [revised_text(figures), ""]
    out += [HOW_CAUSES, ""]
    if scale != "paper":
        out += [REDUCED_CAUSES, ""]
    for paper in PAPERS:
        figs = [f for f in figures if f["paper"] == paper]
        if not figs:
            continue
        out += [f"## {paper} — {PAPERS[paper]}", ""]
        for f in figs:
            out += [f'<a id="{f["id"]}"></a>', "", f"### {f['id']} — {f['title']}", ""]
            out += [f"*Replicates:* {paper_figure(f)}.", ""]
            if (tables or {}).get(f["id"]):
                out += [*table_body(tables[f["id"]]), "", f"(as a figure: [{f['png']}]({f['png']}))", ""]
            elif f.get("png"):
                out += [f"![{f['id']}]({f['png']})", ""]
            size = f"{f['seeds']} seeds × {f['horizon']} rounds" if f.get("seeds") else "closed form / static"
            if f["id"] in unarchived:
                size += " (no archive: rerun to redraw or re-decide)"
            out += [f"*Size at this scale:* {size}.", ""]
            if len(runs) > 1:
                out += [f"*Run:* {_run_key(f['run'])}, generated {f['run']['generated']}.", ""]
            if f.get("redecided"):
                out += [redecided_line(f), ""]
            if f.get("choices"):
                out += [f"*Choices where the paper is silent or ambiguous:* {' '.join(f['choices'].split())}", ""]
            if f["claims"]:
                out += ["| claim | status | numbers |", "|---|---|---|"]
                for c in f["claims"]:
                    text = claim_text(c).replace("|", "\\|")
                    note = f" *{c['note']}*" if c.get("note") else ""
                    origin = first[finding_key(paper, f["id"], c)]
                    if origin != f["id"]:
                        note += f" *(the finding of {origin}, counted once)*"
                    if not counted([(f["id"], c)]):
                        note += " *(designed: shown, not counted)*"
                    status = ICON[c["status"]] + _look_text(c) + earlier_mark([(f["id"], c)]) + revision_cell(c)
                    cause = _cause_text(c, f.get("seeds"))
                    if cause:
                        status += f" — cause: {cause}"
                    if c["status"] == "reproduced" and c.get("weak"):
                        status += f" — ⚠ weak evidence: {c['weak']}"
                    for r in c.get("readings", []):
                        why = _reading_cause(c, r)
                        status += (f"<br>reading *{r['label']}* ({r['says']}): {ICON[r['status']]}{_scope(r)}"
                                   + (f" — cause: {why}" if why else ""))
                    nums = readable(c["numbers"] + "".join(f" ‖ under *{r['label']}*: {r['numbers']}"
                                                           for r in c.get("readings", [])))
                    out.append(f"| {c['id']}: {text}{note} | {_cell(status)} | {_cell(nums)} |")
                out.append("")
            else:
                out += ["No quantitative claim attached.", ""]
    return "\n".join(out) + "\n"


def dump_claims(fid: str, results: list, json_path, rst_path) -> None:
    write_text_atomic(json.dumps({"id": fid, "claims": results}, indent=1), json_path)
    write_text_atomic(claims_rst(fid, results), rst_path)


def decide_figure(figure_path, table_path, json_path, rst_path, record_path=None, archive=None,
                  redrawn: bool = False) -> list:
    """A figure's claims job (``cli claims``): its claims decided on its table (a figure planned in
    looks at its looks, fresh studies on the seeds of the figure's ``archive``), written as JSON and
    reStructuredText and, given ``record_path``, its record (with the content hash of ``archive``;
    ``redrawn``: nothing simulated, so the run that made the numbers is kept, :mod:`redraw`).  Each
    claim's status said on stderr; the results returned.  An ArchiveError when ``archive`` is not the
    figure's."""
    from .claims import evaluate
    from .plans import decided_in_looks
    from .records import make_record, stamped, write_record
    from .tables import read_table

    fig = registry.read_figure(figure_path)    # its claims' names were checked when the workflow resolved it
    entry = fig["entry"]
    table = read_table(table_path)
    results = evaluate(entry, table, fig["scale"], absent=fig.get("absent_data", []), pending=fig.get("pending_curves"))
    fresh = ()
    if fig.get("fresh"):     # fresh studies at their looks: their seeds from the figure's archive
        from .fresh import fresh_rows

        rows = fresh_rows(fig, archive)
        fresh = [(state, rows) for state in fig["fresh"]]
    results = decided_in_looks(entry, table, results, fig["seeds"], fresh)   # a figure planned in looks
    dump_claims(entry["id"], results, json_path, rst_path)
    if record_path:
        digest = None
        if archive:
            from .archive import content_sha256, read_meta

            read_meta(archive, fig["id"])
            digest = content_sha256(archive)
        record = make_record(fig, results, archive_sha256=digest)
        if redrawn:     # nothing simulated: keep the run that made the numbers (ensemble_bandits.redraw)
            record = stamped(redrawn_record(record, previous_record(paths.record_file(fig["scale"], entry["id"])),
                                            archived=bool(fig["series"])))
        write_record(record, record_path)
    for r in results:
        print(f"{r['id']}: {r['status']}", file=sys.stderr)
    return results


def write_report(out, scale: str, ids: list, skipped: list, config_dir: str, schema=None,
                 seeds_per_job: int | None = None) -> None:
    """REPORT.md of the ids' records at a scale (:func:`assemble`) written to ``out``; the report in
    place (figures/<scale>/, where rule publish copies it) stays as it is when only its provenance line
    would change (:func:`redraw.unchanged_report`)."""
    text = assemble(scale, ids, skipped, config_dir, schema, seeds_per_job=seeds_per_job)
    write_text_atomic(unchanged_report(text, os.path.join("figures", scale, os.path.basename(out))), out)


def assemble(scale: str, ids: list, skipped: list, config_dir: str, schema=None,
             seeds_per_job: int | None = None) -> str:
    """REPORT.md of the records of ``ids`` at ``scale``: each record checked against the archive
    committed beside it, with the registry's notes, and at paper scale the revised claims' first-rule
    verdicts and the next planned looks (their cost in jobs of ``seeds_per_job`` seeds, default the
    config file's); a table figure's markdown shown in its section.  A ValueError names an unknown id,
    a missing or damaged record."""
    from .records import read_record

    entries = registry.load_registry(config_dir, schema)
    unknown = [fid for fid in [*ids, *skipped] if fid not in entries]
    if unknown:      # a typo, not a damaged record: say so, and what the ids are
        raise ValueError(f"unknown figure id(s) {unknown}; known ids: {', '.join(sorted(entries))}")
    for fid in ids:
        path = paths.record_file(scale, fid)
        if not os.path.exists(path):
            committed = f", or restore the committed one: git checkout -- {path}" if scale == "paper" else ""
            raise ValueError(f"{fid} has no record at scale {scale} ({path}): build its figure first "
                             f"(snakemake --cores 2 figures/{scale}/{fid}.pdf --config scale={scale}){committed}")
    figures = [read_record(paths.record_file(scale, fid)) for fid in ids]
    for fid in ids:           # a record must state the numbers of the archive committed beside it
        if os.path.exists(paths.archive_file(scale, fid)):
            from .archive import matches_record, read_meta

            matches_record(paths.archive_file(scale, fid), read_meta(paths.archive_file(scale, fid), fid))
    figures = with_registry_notes(figures, entries)
    archived = None
    if scale == "paper":       # revised rules' first verdicts on the archives; the planned looks; archives committed
        figures = _revised(config_dir, entries, ids, figures)
        figures = _planned(config_dir, entries, figures, seeds_per_job)
        archived = {fid for fid in ids if os.path.exists(paths.archive_file(scale, fid))}
    tables = {}      # a table figure's markdown (written beside its PDF), shown in its section as a table
    for fid in ids:
        md = paths.table_markdown(scale, fid)
        if os.path.exists(md):
            tables[fid] = open(md, encoding="utf-8").read()
    return report_markdown(scale, figures, skipped=skipped, archived=archived, tables=tables)


def _planned(config_dir: str, entries: dict, figures: list, seeds_per_job: int | None = None) -> list:
    """:func:`with_planned_looks` of the figures a fresh sequential study plans (registry ``looks:``,
    :mod:`plans`): each claim's next look, its seeds and estimated CPU time."""
    from . import plans

    planned = [f["id"] for f in figures if any(s.fresh for s in plans.studies(entries.get(f["id"], {})))]
    if not planned:
        return figures
    config = registry.with_defaults(registry.load_yaml(os.path.join(config_dir, "config.yaml")))
    figs = {fid: registry.resolve(entries[fid], plans.SCALE, config["scales"]) for fid in planned}
    per_job = seeds_per_job or config["seeds_per_job"]      # the run's (the workflow passes its config's)
    return with_planned_looks(figures, plans.planned_notes(figures, entries, figs, per_job))


def _revised(config_dir: str, entries: dict, ids: list, figures: list) -> list:
    """:func:`with_revisions` of the records: the notes of their revised claims (config/rule_history.yaml;
    :mod:`revisions`), decided again under their first rule on the committed archives."""
    from . import rules
    from .aggregate import build_table
    from .data import config_data_dir
    from .revisions import revision_notes

    history = rules.load_history(os.path.join(config_dir, os.path.basename(rules.HISTORY)))
    if not history:
        return figures
    configfile = os.path.join(config_dir, "config.yaml")
    config = registry.with_defaults(registry.load_yaml(configfile))
    notes = revision_notes(entries, history, ids, config, str(config_data_dir(configfile)), build_table)
    return with_revisions(figures, notes, rules.added_later(history), rules.first_decided(history))
