"""Paper findings across records: which rows are one finding, the verdict the tally counts, and the
tally of REPORT.md in numbers and words."""
from __future__ import annotations

from .papers import CITATIONS as PAPERS
from .report_text import intervals

VERDICTS = ("reproduced", "not reproduced", "inconclusive")      # "reported" rows are not counted


def finding_key(paper: str, fid: str, claim: dict) -> tuple:
    """What makes rows one finding: the paper and the quote (a sentence checked in several figures).
    A designed claim (``finding: false``, a condition or transposition of ours) is its figure's own, even
    where another figure words its condition the same way."""
    key = (paper, " ".join(claim["quote"].split()))
    return key if claim.get("finding", True) else (*key, fid)


def findings(figures: list) -> dict:
    """Each paper finding once: :func:`finding_key` -> [(figure id, claim), ...] in report order."""
    out = {}
    for f in figures:
        for c in f["claims"]:
            out.setdefault(finding_key(f["paper"], f["id"], c), []).append((f["id"], c))
    return out


def counted(rows) -> bool:
    """Whether a finding counts in the tally: every paper sentence (verbatim or paraphrase) counts; a
    designed statement of ours or a transposition (source ``designed``, ``finding: false``) does not."""
    return all(c.get("finding", True) and c.get("source") != "designed" for _, c in rows)


def finding_status(rows) -> str:
    from .claims.core import combine

    return combine(c["status"] for _, c in rows)


def counted_status(rows) -> str:
    """The verdict the tally counts: per row, the verdict under the rule the rule history counts (the
    first rule's, unless a revision fixes a named error: :mod:`rules`), else the current one."""
    from .claims.core import combine

    return combine(_counted_one(c) for _, c in rows)


def _counted_one(c: dict) -> str:
    counted_ = (c.get("revision") or {}).get("counted") or {}
    if counted_.get("rule", "current") != "current" and counted_.get("status"):
        return counted_["status"]
    return c["status"]


def weak_evidence(rows) -> list:
    """The registry's lines saying why a finding's reproduced verdict rests on weak evidence."""
    return list(dict.fromkeys(c["weak"] for _, c in rows if c.get("weak")))


def revised(rows) -> bool:
    return any(c.get("revision") for _, c in rows)


def finding_cause(rows):
    """The cause of a finding that is not reproduced (the first of its rows that names one)."""
    return next((c["cause"] for _, c in rows if c["status"] in ("not reproduced", "inconclusive") and c.get("cause")),
                None)


def reproduced_elsewhere(rows) -> list:
    """The labels of the readings under which a finding's every row is reproduced (a reading that
    decides part of a claim's scope only, ``partial``, does not reproduce the finding)."""
    labels = None
    for _, c in rows:
        mine = {r["label"] for r in c.get("readings", []) if r["status"] == "reproduced" and not r.get("partial")}
        if c["status"] == "reproduced":
            continue
        labels = mine if labels is None else labels & mine
    return sorted(labels or [])


def classify(rows, scale):
    """(class, verdict) of a finding: ``reported``, ``designed``, ``substitute`` or ``counted``, with the
    verdict the tally counts (:func:`counted_status`)."""
    status = counted_status(rows)
    if status not in VERDICTS:
        return "reported", status
    if not counted(rows):
        return "designed", status
    cause = finding_cause(rows) if status != "reproduced" else None
    if cause and cause["kind"] == "substitute":
        return "substitute", status
    return "counted", status


def tally_counts(figures: list, scale: str = "paper") -> dict:
    """The numbers behind :func:`tally`: ``counts`` (verdict -> counted findings, a revised finding under
    the rule the rule history counts) and ``per_paper`` (paper -> such counts), the rows and findings
    left out (``repeats``, ``reported``, ``transposed``, ``substituted``), the ``causes`` of the counted
    findings not reproduced, how many of those are reproduced ``elsewhere`` (another reading), how many
    verdicts come from an ``earlier`` rule, and the ``revised`` findings: how many, how many of them
    ``changed`` (counted verdict differs from the current one) and how many are counted under their
    current rule because the revision ``fixed`` a named error."""
    counts, repeats, reported, transposed, substituted = dict.fromkeys(VERDICTS, 0), 0, 0, 0, 0
    causes, elsewhere, earlier, per_paper = {}, 0, 0, {}
    revised_n, changed, fixed, weak = 0, 0, 0, 0
    for (paper, *_), rows in findings(figures).items():
        kind, status = classify(rows, scale)
        if kind == "reported":
            reported += len(rows)
            continue
        if kind == "designed":
            transposed += 1
            continue
        if kind == "substitute":
            substituted += 1
            continue
        counts[status] += 1
        per_paper.setdefault(paper, dict.fromkeys(VERDICTS, 0))[status] += 1
        repeats += len(rows) - 1
        earlier += bool(earlier_mark(rows))
        weak += status == "reproduced" and bool(weak_evidence(rows))
        if revised(rows):
            revised_n += 1
            changed += status != finding_status(rows)
            fixed += all((c.get("revision") or {}).get("counted", {}).get("rule") == "current"
                         for _, c in rows if c.get("revision"))
        if status != "reproduced":
            cause = finding_cause(rows)
            kind = cause["kind"] if cause else ("no cause stated" if scale == "paper"
                                                else "no cause stated (reduced scale; see below)")
            causes[kind] = causes.get(kind, 0) + 1
            elsewhere += bool(reproduced_elsewhere(rows))
    return {"counts": counts, "per_paper": per_paper, "repeats": repeats, "reported": reported,
            "transposed": transposed, "substituted": substituted, "causes": causes, "elsewhere": elsewhere,
            "earlier": earlier, "revised": revised_n, "changed": changed, "fixed": fixed, "weak": weak}


def tally(figures: list, scale: str = "paper") -> str:
    """The report's count (:func:`tally_counts`) in words: verdicts per finding under the primary reading
    (a finding checked in several figures is reproduced only if it is in each; a revised finding under
    the rule the rule history counts), how many of the others are reproduced under another reading,
    their causes, the rows left out (repeats, reported, designed, substitutes), a line per paper and the
    false verdicts expected at the stated alpha."""
    from .stats import ALPHA

    t = tally_counts(figures, scale)
    counts, repeats, reported, transposed = t["counts"], t["repeats"], t["reported"], t["transposed"]
    substituted, causes, elsewhere, earlier = t["substituted"], t["causes"], t["elsewhere"], t["earlier"]
    revised_n, changed, fixed, per_paper = t["revised"], t["changed"], t["fixed"], t["per_paper"]
    text = f"{sum(counts.values())} claims checked: " + ", ".join(f"{counts[k]} {k}" for k in VERDICTS) + "."
    if t["weak"]:
        text += (f" {t['weak']} of the {counts['reproduced']} reproduced rest on weak evidence (marked *weak evidence*, "
                 "each with why: a check that can hardly fail, a half of the sentence left untested, or an untested "
                 "premise).")
    text += (" Each paper finding counts once, under the paper's text (the primary reading): a sentence checked in "
             "several figures is one claim, reproduced only if it is reproduced in each"
             + (f" ({repeats} rows repeat a finding)." if repeats else "."))
    if revised_n:
        text += (f" {revised_n} of these findings are *revised* (their rule was changed after their paper-scale "
                 f"numbers were seen): the tally counts the verdict under their first rule, except {fixed} whose "
                 f"revision fixes a named error; for {changed} of them the counted verdict differs from the current "
                 f"one (both are shown).")
    if earlier:
        text += (f" {earlier} of these verdicts {'was' if earlier == 1 else 'were'} decided under an earlier rule "
                 "(marked \"earlier rule\": records not re-decided since the registry changed the claim).")
    missed = counts["not reproduced"] + counts["inconclusive"]
    if missed:
        text += (f" Of the {missed} not reproduced or inconclusive, {elsewhere} "
                 f"{'is' if elsewhere == 1 else 'are'} reproduced under another documented reading. Their causes: "
                 + ", ".join(f"{k} {v}" for k, v in sorted(causes.items(), key=lambda kv: (-kv[1], kv[0]))) + ".")
    if substituted:
        text += (f" {substituted} more rest on a substitute setting (not the paper's, which cannot be had offline) and "
                 "are not counted as failures of the paper.")
    if transposed:
        text += (f" {transposed} designed claim(s) (a statement or condition of ours, or a claim transposed to another "
                 "panel) are shown but not counted.")
    if reported:
        text += f" {reported} rows report numbers without a verdict (*reported*) and are not counted."
    shared = shared_evidence(figures, scale)
    if shared:
        text += (f" {len(shared)} counted findings state an estimate of the same runs as another counted finding "
                 f"(marked *same runs as*): they are not independent evidence.")
    decided = counts["reproduced"] + counts["not reproduced"]
    if decided:
        text += (f" Each decided finding is wrong with probability at most alpha = {ALPHA:g} (a one-sided test per "
                 f"comparison; every comparison for *reproduced*, Holm's correction for *not reproduced*), so across "
                 f"the {decided} decided findings at most about {decided * ALPHA:.2g} false verdicts are expected "
                 f"(exact checks have none; the timing ratios and the minimal-M fit, decided on point estimates, are "
                 f"not covered by this bound).")
    if per_paper:
        text += "\n\n" + "\n".join(
            f"- **{paper}**: {sum(c.values())} checked: " + ", ".join(f"{c[k]} {k}" for k in VERDICTS)
            for paper, c in sorted(per_paper.items(), key=lambda kv: list(PAPERS).index(kv[0])
                                   if kv[0] in PAPERS else len(PAPERS)))
    return text


def shared_evidence(figures: list, scale: str = "paper") -> dict:
    """{finding key: [labels of the other counted findings]} of the counted findings that state an estimate
    of the same runs as another (:func:`report_text.intervals`): one piece of evidence under two quotes."""
    grouped = {k: rows for k, rows in findings(figures).items() if classify(rows, scale)[0] == "counted"}
    stated = {k: set().union(*(intervals(c["numbers"]) for _, c in rows)) for k, rows in grouped.items()}
    out = {}
    for k, rows in grouped.items():
        others = [f"{r[0][0]} · {r[0][1]['id']}" for j, r in grouped.items() if j != k and stated[k] & stated[j]]
        if others:
            out[k] = others
    return out


def earlier_mark(rows) -> str:
    """`` (earlier rule)`` when a row of the finding was decided under a rule the registry has changed since."""
    return " (earlier rule)" if any(c.get("earlier_rule") for _, c in rows) else ""
