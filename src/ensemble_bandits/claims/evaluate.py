"""A registry entry's claims evaluated on its table, and the names they use checked.

A claim is decided over all the comparisons of its checks together (see ``core.decide``); checks
without sampling error contribute their status.  Four claim-level conditions are written among
a claim's checks (the registry schema allows only ``checks``):

- ``premise: {claim: <id>}``: the claim presumes an earlier claim of the same figure; it takes that
  claim's status (undecided premise: inconclusive; failed premise: not reproduced).
- ``seed_blocks: {primary: [a, b], replicate: [c, d]}``: the claim is decided on seeds a..b-1 and
  again on the disjoint block c..d-1; a verdict that differs between the blocks is inconclusive.
- ``after_round: {t: <n>}``: the claim says nothing about runs that end by round n (e.g. a warm-up
  in which every algorithm pulls the same arms, so every difference is exactly 0): when the table's
  last round is <= n the claim is inconclusive, "not measured" (a reduced scale's short horizon).
- ``report_only: true`` in a check's args: its numbers are shown without a verdict (``reported``);
  a claim of such checks alone is reported, and is not counted as reproduced or not.

Where a claim's text comes from is the first word of its note: ``Paraphrase:`` (our restatement
of a formula, table or sentence of the paper) or ``Designed:`` (a statement of ours that tests the
paper); otherwise the quote is the paper's sentence (symbols in ASCII, "..." for omitted words,
[brackets] for ours).
"""
from __future__ import annotations

import pandas as pd

from .core import CHECKS, INCONCLUSIVE, REPORTED, ClaimError, combine, decide

CLAIM_LEVEL = ("premise", "seed_blocks", "after_round")
SOURCES = {"Paraphrase:": "paraphrase", "Designed:": "designed"}


def claim_source(claim: dict) -> tuple:
    """(source, note without its tag): ``verbatim``, ``paraphrase`` or ``designed``."""
    note = " ".join(claim.get("note", "").split())
    for tag, source in SOURCES.items():
        if note.startswith(tag):
            return source, note[len(tag):].strip()
    return "verbatim", note


def seed_block(table: pd.DataFrame, block) -> pd.DataFrame:
    """The rows of seeds block[0] .. block[1] - 1 (ClaimError when there are none)."""
    if "seed" not in table.columns:
        raise ClaimError("seed blocks need a table with a seed column")
    sub = table[(table["seed"] >= block[0]) & (table["seed"] < block[1])]
    if sub.empty:
        raise ClaimError(f"no seeds in [{block[0]}, {block[1]})")
    return sub


def _block_label(table, block):
    seeds = sorted(set(table["seed"]))
    return f"seeds [{block[0]}, {block[1]}) ({len(seeds)} seeds)"


def _run_checks(entry, claim, table, scale, done) -> tuple:
    """(status, numbers) of a claim's checks on ``table`` (seed blocks already applied)."""
    statuses, parts, comparisons = [], [], []
    for chk in claim["checks"]:
        if chk["fn"] == "seed_blocks":
            continue
        args = dict(chk.get("args", {}))
        report_only = args.pop("report_only", False)
        if chk["fn"] == "premise":
            if args["claim"] not in done:
                raise ClaimError(f"{entry['id']}: claim {claim['id']!r}: premise {args['claim']!r} is not an "
                                 f"earlier claim of the figure")
            st = done[args["claim"]]
            st, nums, comps = (INCONCLUSIVE if st == REPORTED else st), f"premise {args['claim']!r}: {st}", ()
        elif chk["fn"] == "after_round":
            last = int(table["t"].max())
            if last > int(args["t"]):
                continue
            st, comps = INCONCLUSIVE, ()
            nums = f"not measured at scale {scale}: the runs end at t = {last}, not after round {args['t']}"
        else:
            try:
                result = CHECKS[chk["fn"]](table, **args)
                st, nums, comps = result[0], result[1], getattr(result, "comparisons", ())
            except ClaimError as err:
                if scale == "paper":
                    raise ClaimError(f"{entry['id']}: claim {claim['id']!r}: {err}") from None
                st, nums, comps = INCONCLUSIVE, f"not measured at scale {scale} (reduced grid): {err}", ()
        if report_only:
            statuses.append(REPORTED)
            parts.append(f"reported, no verdict: {nums}")
        else:
            comparisons += comps
            if not comps:
                statuses.append(st)
            parts.append(nums)
    numbers = " | ".join(parts)
    if comparisons:
        st, summary = decide(comparisons)
        statuses.append(st)
        numbers += f" — {summary}"
    return combine(statuses), numbers


def _evaluate_claim(entry, claim, table, scale, done) -> tuple:
    blocks = [c["args"] for c in claim["checks"] if c["fn"] == "seed_blocks"]
    if not blocks:
        return _run_checks(entry, claim, table, scale, done)
    outcomes = []
    for block in (blocks[0]["primary"], blocks[0]["replicate"]):
        try:
            sub = seed_block(table, block)
        except ClaimError as err:
            if scale == "paper":
                raise ClaimError(f"{entry['id']}: claim {claim['id']!r}: {err}") from None
            outcomes.append((INCONCLUSIVE, f"seeds [{block[0]}, {block[1]}): not measured at scale {scale} ({err})"))
            continue
        status, numbers = _run_checks(entry, claim, sub, scale, done)
        outcomes.append((status, f"{_block_label(sub, block)}: {status}: {numbers}"))
    (first, text1), (second, text2) = outcomes
    status = first if first == second else INCONCLUSIVE
    flip = "" if first == second else f" || verdicts differ between the seed blocks ({first} vs {second}): inconclusive"
    return status, f"{text1} || {text2}{flip}"


def evaluate(entry: dict, table: pd.DataFrame, scale: str = "paper", absent=(), pending=None) -> list:
    """All claims of a registry entry, as dicts (id, quote, source, status, numbers, note).

    A claim whose curves, grid points or seeds are not simulated at a reduced scale is reported as
    inconclusive ("not measured at this scale"); at paper scale that is an error.  ``absent``: the
    optional datasets absent from data_dir, whose cells were left out: when nothing was simulated,
    every claim is inconclusive ("data absent"), at every scale.  ``pending``: {curve: reason} of the
    figure's pending curves (registry ``pending:``, not simulated); a claim naming one is inconclusive.
    """
    results, done = [], {}
    for claim in entry.get("claims", []):
        waiting = [c for chk in claim["checks"] for c in check_curves(chk) if c in (pending or {})]
        if waiting:
            why = "; ".join(f"{c}: {pending[c]}" for c in dict.fromkeys(waiting))
            status, numbers = INCONCLUSIVE, f"not measured: curve(s) not simulated yet (pending: {why})"
        elif absent and "curve" not in table.columns:
            status, numbers = INCONCLUSIVE, f"data absent: {', '.join(absent)} not in data_dir (optional): not measured"
        else:
            status, numbers = _evaluate_claim(entry, claim, table, scale, done)
        done[claim["id"]] = status
        source, note = claim_source(claim)
        results.append({"id": claim["id"], "quote": " ".join(claim["quote"].split()), "source": source,
                        "status": status, "numbers": numbers, "note": note})
    return results


def _block_pair(args) -> bool:
    blocks = [args.get("primary"), args.get("replicate")]
    if not all(isinstance(b, list) and len(b) == 2 and all(isinstance(v, int) for v in b) and b[0] < b[1]
               for b in blocks):
        return False
    (a, b), (c, d) = blocks
    return b <= c or d <= a


def check_curves(chk: dict) -> list:
    """The curve labels a check's arguments name (the arguments its function declares with
    ``@check(curves=...)``)."""
    args, names = chk.get("args", {}), []
    for key in getattr(CHECKS.get(chk["fn"]), "curve_args", ()):
        if key in args:
            vals = args[key] if isinstance(args[key], list) else [args[key]]
            names += [v["curve"] if isinstance(v, dict) else v for v in vals]
    return [v for v in names if isinstance(v, str)]


def validate_names(entry: dict, curves, panels) -> None:
    """Every curve/panel a claim names exists in the paper-scale figure (else a registry error);
    the curve names are the arguments each check declares with ``@check(curves=...)``.  A premise
    names an earlier claim of the figure; seed blocks are two disjoint [start, end) ranges."""
    earlier = []
    for claim in entry.get("claims", []):
        for chk in claim["checks"]:
            where = f"{entry['id']}: claim {claim['id']!r}"
            if chk["fn"] not in CHECKS and chk["fn"] not in CLAIM_LEVEL:
                raise ClaimError(f"{where} uses unknown check {chk['fn']!r}; "
                                 f"known: {', '.join(sorted([*CHECKS, *CLAIM_LEVEL]))}")
            args = chk.get("args", {})
            if chk["fn"] == "premise" and args.get("claim") not in earlier:
                raise ClaimError(f"{where}: its premise must name an earlier claim of the figure; earlier: {earlier}")
            if chk["fn"] == "after_round" and (set(args) != {"t"} or not isinstance(args["t"], int)):
                raise ClaimError(f"{where}: after_round needs one integer round t; got {args}")
            if chk["fn"] == "seed_blocks" and not _block_pair(args):
                raise ClaimError(f"{where}: seed_blocks needs primary and replicate, two disjoint [start, end) "
                                 f"integer ranges; got {args}")
            missing = [v for v in check_curves(chk) if v not in curves]
            if missing and curves:
                raise ClaimError(f"{where} names curve(s) {missing} that the "
                                 f"figure does not have; curves: {list(curves)}")
            missing = [p for p in args.get("panels") or [] if p not in panels]
            if missing:
                raise ClaimError(f"{where} names panel(s) {missing}; panels: {list(panels)}")
        earlier.append(claim["id"])

