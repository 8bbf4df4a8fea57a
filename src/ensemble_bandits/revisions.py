"""Revised claims at report time: the verdict under the first rule (and under the rule the tally counts)
decided again on the committed archive with today's claim code, beside the current one.

For each claim the rule history (:mod:`rules`) revises, :func:`revision_notes` gives what REPORT.md
shows: the commits of its revisions, the first rule's verdict and how it was obtained (decided again on
the committed archive, or, where that cannot be done, the verdict committed under that rule, with why),
and the verdict the tally counts (the first rule's unless a revision fixes a named error).
:func:`revision_cell` and :func:`revised_text` write them into a claim's row and the report's list of
revisions.
"""
from __future__ import annotations

import copy
import os

from . import rules


def with_rule(entry: dict, cid: str, rule: dict) -> dict:
    """``entry`` reduced to claim ``cid`` and its premises, decided under ``rule`` (checks of the claim
    and of each premise, and the figure's derive), without readings (the primary reading only)."""
    entry = copy.deepcopy(entry)
    by_id = {c["id"]: c for c in entry.get("claims") or []}
    keep = set()

    def put(claim_id, r):
        if claim_id not in by_id:
            return
        keep.add(claim_id)
        by_id[claim_id]["checks"] = copy.deepcopy(r["checks"])
        for pid, pr in (r.get("premises") or {}).items():
            put(pid, pr)

    put(cid, rule)
    entry["claims"] = [c for c in entry["claims"] if c["id"] in keep]
    entry.pop("readings", None)
    entry.pop("derive", None)
    if rule.get("derive"):
        entry["derive"] = copy.deepcopy(rule["derive"])
    return entry


def decide_under(entry: dict, cid: str, rule: dict, config: dict, data_dir: str, build_table,
                 scale: str = "paper") -> dict:
    """{status, numbers} of claim ``cid`` under ``rule`` on the figure's committed archive(s), its table
    built by ``build_table`` (``aggregate.build_table``) (RuleError naming why when the archive cannot support
    it: a cell it lacks, a check today's code does not have)."""
    from . import archive, registry
    from .claims import evaluate
    from .claims.core import ClaimError

    entry = with_rule(entry, cid, rule)
    try:
        fig = registry.resolve(entry, scale, config["scales"])
        sources = archive.committed(os.path.dirname(_archive_path(scale, entry["id"])), entry["id"])
        if fig["series"]:
            covered = {k for _, keys in archive.covering(fig, sources, strict=False) for k in keys}
            lacking = sorted({s["key"] for s in fig["series"]} - covered)
            if lacking:
                raise rules.RuleError(f"the committed archives lack {len(lacking)} of its cells")
        table = build_table(fig, config["seeds_per_job"], data_dir, archives=sources)
        result = {r["id"]: r for r in evaluate(entry, table, scale, pending=fig.get("pending_curves"))}[cid]
    except (ClaimError, KeyError, TypeError, ValueError, SystemExit) as err:
        raise rules.RuleError(f"{type(err).__name__}: {err}") from None
    return {"status": result["status"], "numbers": result["numbers"]}


def _archive_path(scale, fid):
    from .paths import archive_file

    return archive_file(scale, fid)


def _verdict_under(entry, cid, history_entry, index, config, data_dir, build_table) -> dict:
    """The verdict under the earlier rule of revision ``index``: decided again where the rule is written
    in today's vocabulary (it differs from the rule after it), else the one committed under it."""
    revisions = history_entry["revisions"]
    rev = revisions[index]
    committed = rev.get("earlier_verdict") or (history_entry["first"] if index == 0 else {})
    in_code = [r["commit"] for r in revisions[index:] if r.get("recomputable") is False]
    if in_code:
        why = (f"the change at {', '.join(in_code)} was made in the claim code too and cannot be written as a rule, "
               f"so the earlier rule cannot be decided again with today's code")
    else:
        try:
            return {**decide_under(entry, cid, rev["earlier_rule"], config, data_dir, build_table), "how": "archive"}
        except rules.RuleError as err:
            why = f"it cannot be decided again on the committed archive ({err})"
    if committed.get("status"):
        return {"status": committed["status"], "how": f"as committed at {committed['commit']}; {why}"}
    return {"status": None, "how": why}


def revision_notes(entries: dict, history: dict, ids, config: dict, data_dir: str, build_table) -> dict:
    """{(figure id, claim id): note} for every revised claim of the figures ``ids`` (their tables built
    by ``build_table``, ``aggregate.build_table``, from the committed archives): ``commits`` (of its
    revisions), ``reasons``, ``before`` (each revision's ``earlier_verdict``: the last verdict committed under
    the rule it replaced, or None), ``fixes_error`` (or None), ``after_numbers``, ``first`` (its first rule's
    verdict: status and ``how``) and ``counted`` (the verdict the tally counts: status and which rule)."""
    notes = {}
    for fid in ids:
        for cid, h in (history.get(fid) or {}).items():
            revisions = h.get("revisions") or []
            if not revisions or cid not in {c["id"] for c in entries[fid].get("claims") or []}:
                continue
            first = _verdict_under(entries[fid], cid, h, 0, config, data_dir, build_table)
            k = rules.counted_revision(h)
            if k is None:
                counted = {"rule": "current"}
            else:
                under = first if k == 0 else _verdict_under(entries[fid], cid, h, k, config, data_dir, build_table)
                counted = {"rule": "first" if k == 0 else f"the rule of {revisions[k - 1]['commit']}", **under}
            notes[fid, cid] = {
                "commits": [r["commit"] for r in revisions], "reasons": [r["reason"] for r in revisions],
                "before": [r.get("earlier_verdict") for r in revisions],
                "fixes_error": next((r["fixes_error"] for r in reversed(revisions) if r.get("fixes_error")), None),
                "after_numbers": any(r["after_numbers"] for r in revisions),
                "first_commit": h["first"]["commit"], "first": first, "counted": counted}
    return notes


def revised_text(figures: list) -> str:
    """The paragraph that lists the revised findings: rule changed after the numbers were seen."""
    items = []
    for f in figures:
        for c in f["claims"]:
            n = c.get("revision")
            if not n:
                continue
            fix = f"; fixes: {n['fixes_error']}" if n["fixes_error"] else ""
            items.append(f"{f['id']} · {c['id']} (first decided {n['first_commit']}; revised "
                         f"{', '.join(n['commits'])}{fix})")
    later = [f"{f['id']} · {c['id']} (after {c['added_after']})" for f in figures for c in f["claims"]
             if c.get("added_after")]
    if later:
        later_text = (" Claims added to a figure after its first paper-scale numbers were seen (their rules were "
                      "not revised, but neither were they fixed before those numbers): " + "; ".join(later) + ".")
    else:
        later_text = ""
    if not items:
        return later_text.strip()
    return ("Revised rules. A claim's rule (its checks, margins, location, premises and derived table: "
            "`config/rule_history.yaml`, fingerprinted by `ensemble_bandits.rules`) was first decided at paper scale "
            "at the commit named; a later change is a *revision*, made after the numbers were seen. Its row shows the "
            "verdict under the first rule (decided again on the committed archive with today's claim code, or, where "
            "that cannot be done, the verdict committed under it, with why) beside the current one, and the tally "
            "counts the first rule's verdict unless the revision fixes the named error. The revised findings: "
            + "; ".join(items) + "." + later_text)


def revision_cell(c: dict) -> str:
    """A revised claim's history in its section row: each revision's commit and reason (and, after the
    first, the verdict committed under the rule it replaced), the first rule's verdict and how it was
    obtained, and which verdict the tally counts (or, for a claim added after its
    figure's first paper-scale numbers, that commit)."""
    n = c.get("revision")
    later = (f"<br>*added to the figure after its first paper-scale numbers ({c['added_after']})*"
             if c.get("added_after") else "")
    if not n:
        return later
    from .report_text import readable

    def how(verdict):
        if verdict["how"] != "archive":
            return verdict["how"]
        numbers = " ".join(verdict.get("numbers", "").split())[:400]
        return f"decided again on the committed archive: {readable(numbers)}"

    before = n.get("before") or [None] * len(n["commits"])
    parts = [f"revised at {commit}: {why}" + (f" (the verdict before it: {b['status']}, committed at {b['commit']})"
                                               if i and b else "")
             for i, (commit, why, b) in enumerate(zip(n["commits"], n["reasons"], before))]
    first = n["first"]
    parts.append(f"under the first rule ({n['first_commit']}): {first.get('status') or 'not known'} ({how(first)})")
    counted_ = n["counted"]
    if counted_["rule"] == "current":
        parts.append(f"counted: the current verdict (the revision fixes: {n['fixes_error']})")
    elif counted_["rule"] == "first":
        parts.append(f"counted: {counted_.get('status') or 'not known'}, under the first rule")
    else:
        parts.append(f"counted: {counted_.get('status') or 'not known'}, under {counted_['rule']} ({how(counted_)})")
    return "<br>*" + "; ".join(parts) + "*" + later
