"""A claim's rule, its fingerprint, and the rule history (``config/rule_history.yaml``).

A claim's *rule* is everything in the registry that decides its verdict: its checks (each check's
``fn`` and ``args``: margins, thresholds, the location statistic, seed blocks, ``after_round``), and,
for each ``premise`` it rests on, that claim's rule in turn (a premise's verdict is part of the
claim's).  Its *fingerprint* is a short SHA-256 of the rule as canonical JSON.

The rule history records, per figure and claim, the rule under which the claim was first decided at
paper scale (fingerprint, commit, date) and each later change, a *revision*: the earlier rule in full
(so the earlier verdict can be decided again on the committed archive), the new fingerprint, the
commit and date of the change, whether it was made after the numbers were seen, a one-line reason,
where it corrects an error, ``fixes_error: <the error>``, and the last verdict committed under the
earlier rule.  A change made in code while the registry's text stayed (``code_change: true``) writes
the earlier rule in today's vocabulary where it can.  The report shows the verdict under the first
rule beside the current one, and the tally counts the first rule's verdict unless a revision fixes a
named error (:func:`counted_revision`).  ``tests/test_rule_history.py`` fails when a claim's
rule differs from the history's latest without a revision, and when a claim decided at paper scale
has no history entry.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

HISTORY = Path("config") / "rule_history.yaml"


class RuleError(ValueError):
    """A rule history that does not match the registry, or a rule that cannot be decided again."""


def rule_of(entry: dict, cid: str) -> dict:
    """The rule of claim ``cid`` of a registry ``entry``: its checks, the rule of each premise, the
    figure's ``derive`` (the derived table its checks read, e.g. epp-fig2b's fit of the minimal M with
    its bootstrap), where it has one, and the looks that decide it where the figure plans looks on its
    own seeds (``looks: [...]``, ensemble_bandits.plans)."""
    by_id = {c["id"]: c for c in entry.get("claims") or []}
    if cid not in by_id:
        raise RuleError(f"{entry.get('id', '?')}: no claim {cid!r}; claims: {sorted(by_id)}")
    checks = by_id[cid].get("checks", [])
    premises = {chk.get("args", {}).get("claim") for chk in checks if chk.get("fn") == "premise"}
    rule = {"checks": checks}
    known = sorted(p for p in premises if p in by_id and p != cid)
    if known:
        rule["premises"] = {p: {k: v for k, v in rule_of(entry, p).items() if k != "derive"} for p in known}
    if entry.get("derive"):
        rule["derive"] = entry["derive"]
    from .plans import studies

    study = next((s for s in studies(entry) if cid in s.claims), None)
    if study:    # decided at the looks planned: on the figure's own seeds, or a fresh study's seeds
        rule["looks"] = {"start": study.start, "n": list(study.n)} if study.fresh else list(study.n)
    return json.loads(canonical(rule))


def canonical(rule: dict) -> str:
    """The rule as canonical JSON (sorted keys, no spaces)."""
    return json.dumps(rule, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)


def fingerprint(rule: dict) -> str:
    """12 hex digits of the SHA-256 of the rule's canonical JSON."""
    return hashlib.sha256(canonical(rule).encode()).hexdigest()[:12]


def load_history(path=HISTORY) -> dict:
    """{figure id: {claim id: entry}} of the rule history (empty when the file is absent)."""
    import yaml

    path = Path(path)
    if not path.exists():
        return {}
    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh) or {}
    if not isinstance(data, dict):
        raise RuleError(f"{path}: the top level must map figure ids to their claims")
    return data


def latest(entry: dict) -> str:
    """The fingerprint of the newest rule the history records for a claim."""
    revisions = entry.get("revisions") or []
    return revisions[-1]["fingerprint"] if revisions else entry["first"]["fingerprint"]


def counted_revision(entry: dict):
    """The index of the revision whose earlier rule gives the verdict the tally counts, or None where
    it counts the current rule's.  The tally counts the first rule's verdict unless a revision fixes a
    named error (``fixes_error``): then the rule that revision made stands as if first, until a later
    revision that fixes none."""
    revisions = entry.get("revisions") or []
    fixed = max((i for i, r in enumerate(revisions) if r.get("fixes_error")), default=-1)
    return fixed + 1 if fixed + 1 < len(revisions) else None


def added_later(history: dict) -> dict:
    """{(figure id, claim id): commit} of the claims added to a figure after its first paper-scale
    verdict (``first.added_after``: that verdict's commit)."""
    return {(fid, cid): e["first"]["added_after"] for fid, claims in history.items()
            for cid, e in (claims or {}).items() if e["first"].get("added_after")}


def first_decided(history: dict) -> dict:
    """{(figure id, claim id): "commit (date)"} of every claim's first paper-scale verdict."""
    return {(fid, cid): f"{e['first']['commit']} ({e['first']['date']})" for fid, claims in history.items()
            for cid, e in (claims or {}).items() if e["first"].get("commit")}


def unrecorded(entries: dict, history: dict) -> list:
    """``fid · cid: why`` for every claim of the registry ``entries`` whose current rule is not the
    history's latest (a rule change without a revision entry); claims the history lacks are left to
    :func:`missing`."""
    out = []
    for fid, claims in history.items():
        entry_now = entries.get(fid, {})
        ids = {c["id"] for c in entry_now.get("claims") or []}
        for cid, entry in (claims or {}).items():
            if cid not in ids:
                out.append(f"{fid} · {cid}: in the rule history but not in the registry")
                continue
            now = fingerprint(rule_of(entry_now, cid))
            if now != latest(entry):
                out.append(f"{fid} · {cid}: its rule is {now}, the history's latest is {latest(entry)}: add a "
                           f"revision (earlier rule, commit, date, after_numbers, reason) to {HISTORY}; once the "
                           f"change is committed, `python tools/rule_history.py --write {HISTORY}` drafts it")
    return out


def missing(decided: dict, history: dict) -> list:
    """``fid · cid`` of the claims decided at paper scale (``decided``: {fid: [claim ids]}, from the
    committed records) that the history lacks."""
    return [f"{fid} · {cid}" for fid, cids in decided.items() for cid in cids if cid not in (history.get(fid) or {})]


def check_entry(fid: str, cid: str, entry: dict) -> None:
    """RuleError unless a history entry has its fields (first, and per revision the earlier rule,
    fingerprint, commit, date, after_numbers and reason)."""
    where = f"{HISTORY}: {fid} · {cid}"
    first = entry.get("first") or {}
    if not {"fingerprint", "commit", "date"} <= set(first):
        raise RuleError(f"{where}: 'first' needs fingerprint, commit and date")
    for i, rev in enumerate(entry.get("revisions") or []):
        need = {"earlier_rule", "fingerprint", "commit", "date", "after_numbers", "reason"}
        if not need <= set(rev):
            raise RuleError(f"{where}: revision {i + 1} lacks {sorted(need - set(rev))}")
        if not isinstance(rev["after_numbers"], bool) or not str(rev["reason"]).strip():
            raise RuleError(f"{where}: revision {i + 1} needs after_numbers true/false and a reason")
