"""A registry entry's claims evaluated on its table, and the names they use checked.

A claim is decided over all the comparisons of its checks together (see ``core.decide``); checks
without sampling error contribute their status.  Four claim-level conditions are written among
a claim's checks (the registry schema allows only ``checks``):

- ``premise: {claim: <id>}``: the claim presumes an earlier claim of the same figure; it takes that
  claim's status (undecided premise: inconclusive; failed premise: not reproduced).  With
  ``if_failed: inconclusive`` a failed premise leaves the claim undecided instead: the premise is a
  condition under which the claim can be tested (e.g. regrets that have converged), not part of it.
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

from ..readings import changes_runs, claims_under, primary_rows, reading_rows, readings_of
from .argspec import check_args
from .core import (CHECKS, FAILED, INCONCLUSIVE, REPORTED, ClaimError, combine, decide, decisive, seeds_record,
                   seeds_to_decide)

CLAIM_LEVEL = ("premise", "seed_blocks", "after_round")
# Below this many seeds a statistical claim gets no verdict: "not measured at this scale".
MIN_SEEDS = 5
# Why a finding is not reproduced or inconclusive (registry ``cause: {kind, why}``).
CAUSES = {
    "paper-error": "the paper's statement is wrong as written",
    "reading": "the verdict turns on a reading of an ambiguity; the other reading is run and shown",
    "underpowered": "too few seeds to decide",
    "substitute": "the setting here is a substitute for the paper's (not a test of the paper)",
    "measurement": "what is measured here cannot test the claim",
    "genuine": "not reproduced under the faithful configuration",
}
SOURCES = {"Paraphrase:": "paraphrase", "Designed:": "designed"}


def cause_of(cause: dict) -> dict:
    """A registry ``cause`` (or one of ``reading_causes``) as a record states it: kind and one-line why."""
    return {"kind": cause["kind"], "why": " ".join(cause["why"].split())}


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
    """(status, numbers, seeds to decide) of a claim's checks on ``table`` (seed blocks already
    applied).  A claim decided by comparisons over fewer than MIN_SEEDS seeds gets no verdict."""
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
            given = INCONCLUSIVE if st == REPORTED or (st == FAILED and args.get("if_failed") == INCONCLUSIVE) else st
            st, nums, comps = given, f"premise {args['claim']!r}: {st}", ()
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
    needed, key = None, None
    if comparisons:
        st, summary = decide(comparisons)
        n_seeds = table["seed"].nunique() if "seed" in table.columns else None
        if n_seeds is not None and n_seeds < MIN_SEEDS:
            return INCONCLUSIVE, (f"not measured at scale {scale}: {n_seeds} seeds, fewer than the {MIN_SEEDS} a "
                                  f"verdict needs (numbers shown only): {numbers}"), None
        statuses.append(st)
        numbers += f" — {summary}"
        needed = seeds_to_decide(comparisons)
        c = decisive(comparisons)
        key = c.text or c.label
    return combine(statuses), numbers, {"seeds": needed, "decisive": key}


def _evaluate_claim(entry, claim, table, scale, done) -> tuple:
    blocks = [c["args"] for c in claim["checks"] if c["fn"] == "seed_blocks"]
    if not blocks:
        return _run_checks(entry, claim, table, scale, done)
    outcomes, needed = [], []
    for block in (blocks[0]["primary"], blocks[0]["replicate"]):
        try:
            sub = seed_block(table, block)
        except ClaimError as err:
            if scale == "paper":
                raise ClaimError(f"{entry['id']}: claim {claim['id']!r}: {err}") from None
            outcomes.append((INCONCLUSIVE, f"seeds [{block[0]}, {block[1]}): not measured at scale {scale} ({err})"))
            needed.append(None)
            continue
        status, numbers, info = _run_checks(entry, claim, sub, scale, done)
        outcomes.append((status, f"{_block_label(sub, block)}: {status}: {numbers}"))
        needed.append(info)
    (first, text1), (second, text2) = outcomes
    status = first if first == second else INCONCLUSIVE
    flip = "" if first == second else f" || verdicts differ between the seed blocks ({first} vs {second}): inconclusive"
    seeds = [i["seeds"] for i in needed if i and i.get("seeds") is not None]
    key = None
    for info, (st, _), b in zip(needed, outcomes, (blocks[0]["primary"], blocks[0]["replicate"])):
        if info and info.get("decisive") and (st == status or key is None):
            key = f"seeds [{b[0]}, {b[1]}): {info['decisive']}"
            if st == status:
                break
    return status, f"{text1} || {text2}{flip}", {"seeds": max(seeds) if seeds else None, "decisive": key}


def evaluate(entry: dict, table: pd.DataFrame, scale: str = "paper", absent=(), pending=None) -> list:
    """All claims of a registry entry, as dicts (id, quote, source, status, numbers, note, and where
    they apply: cause, seeds_to_decide, finding, readings).

    A claim whose curves, grid points or seeds are not simulated at a reduced scale is reported as
    inconclusive ("not measured at this scale"); at paper scale that is an error.  ``absent``: the
    optional datasets absent from data_dir, whose cells were left out: when nothing was simulated,
    every claim is inconclusive ("data absent"), at every scale.  ``pending``: {curve: reason} of the
    figure's pending curves (registry ``pending:``, not simulated); a claim naming one is inconclusive.
    Each of the entry's readings decides every claim again on its own rows and checks
    (:mod:`readings`); a claim lists the readings that give it other numbers.
    """
    claims = entry.get("claims", [])
    results = _evaluate_all(entry, claims, primary_rows(table), scale, absent, pending)
    for name, reading in readings_of(entry).items():
        if reading.get("pending"):
            why = " ".join(reading["pending"].split())
            for res in results:
                _add_reading(res, name, reading, {"status": INCONCLUSIVE,
                                                  "numbers": f"not measured: this reading's runs are pending ({why})"})
            continue
        if changes_runs(reading) and "curve" in table.columns and "reading" not in table.columns:
            raise ClaimError(f"{entry['id']}: reading {name!r} has no rows of its own: the figure's table has no "
                             f"'reading' column (a derived table must keep it, as aggregate.timing_table does)")
        under = claims_under(claims, reading)
        alt = _evaluate_all(entry, under, reading_rows(table, name), scale, absent, pending)
        seeds = _own_seeds(table, name) if "seeds" in reading else None
        for res, other, claim in zip(results, alt, claims):
            overridden = claim["id"] in (reading.get("claims") or {})
            if overridden or (other["status"], other["numbers"]) != (res["status"], res["numbers"]):
                _add_reading(res, name, reading, other, seeds)
    return results


def _own_seeds(table: pd.DataFrame, name: str):
    """The number of seeds of reading ``name``'s own series (a reading with fewer ``seeds``)."""
    if "reading" not in table.columns or "seed" not in table.columns:
        return None
    mine = table.loc[table["reading"] == name, "seed"]
    return int(mine.nunique()) if len(mine) else None


def _add_reading(res: dict, name: str, reading: dict, other: dict, seeds: int | None = None) -> None:
    """List under claim result ``res`` its verdict ``other`` (status, numbers[, seeds_to_decide])
    under reading ``name``; ``seeds``: the seed count of a reading run on fewer seeds."""
    res.setdefault("readings", []).append(
        {"reading": name, "label": reading["label"], "says": " ".join(reading["says"].split()),
         **({"partial": " ".join(reading["partial"].split())} if reading.get("partial") else {}),
         "status": other["status"], "numbers": other["numbers"],
         **({"seeds_to_decide": other["seeds_to_decide"]} if "seeds_to_decide" in other else {}),
         **({"seeds": seeds} if seeds else {})})


def _evaluate_all(entry, claims, table, scale, absent, pending) -> list:
    results, done = [], {}
    for claim in claims:
        info = None
        waiting = [c for chk in claim["checks"] for c in check_curves(chk) if c in (pending or {})]
        if waiting:
            why = "; ".join(f"{c}: {pending[c]}" for c in dict.fromkeys(waiting))
            status, numbers = INCONCLUSIVE, f"not measured: curve(s) not simulated yet (pending: {why})"
        elif absent and "curve" not in table.columns:
            status, numbers = INCONCLUSIVE, f"data absent: {', '.join(absent)} not in data_dir (optional): not measured"
        else:
            status, numbers, info = _evaluate_claim(entry, claim, table, scale, done)
        done[claim["id"]] = status
        source, note = claim_source(claim)
        res = {"id": claim["id"], "quote": " ".join(claim["quote"].split()), "source": source,
               "status": status, "numbers": numbers, "note": note}
        needed = (info or {}).get("seeds")
        if status == INCONCLUSIVE and needed is not None:
            res["seeds_to_decide"] = seeds_record(needed)
        if (info or {}).get("decisive"):
            res["decisive"] = info["decisive"]
        if "cause" in claim:
            res["cause"] = cause_of(claim["cause"])
        if claim.get("finding") is False:
            res["finding"] = False
        results.append(res)
    return results


def _block_pair(args) -> bool:
    blocks = [args.get("primary"), args.get("replicate")]
    if not all(isinstance(b, list) and len(b) == 2 and all(isinstance(v, int) for v in b) and b[0] < b[1]
               for b in blocks):
        return False
    (a, b), (c, d) = blocks
    return b <= c or d <= a


def check_arguments(fn: str) -> set:
    """The arguments a registry check may give to check ``fn`` (its parameters after the table, and
    ``report_only``)."""
    import inspect

    params = list(inspect.signature(CHECKS[fn]).parameters)[1:]
    return {*params, "report_only"}


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
    names an earlier claim of the figure; seed blocks are two disjoint [start, end) ranges; a claim's
    ``reading_causes`` name readings of the figure."""
    readings = readings_of(entry)
    for claim in entry.get("claims", []):
        unknown = sorted(set(claim.get("reading_causes", {})) - set(readings))
        if unknown:
            raise ClaimError(f"{entry['id']}: claim {claim['id']!r} gives reading_causes for {unknown}, which are "
                             f"not readings of the figure; its readings: {sorted(readings)}")
    _validate_claims(entry["id"], entry.get("claims", []), curves, panels)
    for name, reading in readings.items():     # a reading's claims name the same curves
        if reading.get("claims"):
            _validate_claims(f"{entry['id']} (reading {name!r})", claims_under(entry.get("claims", []), reading),
                             curves, panels)


def _validate_claims(fid: str, claims: list, curves, panels) -> None:
    """:func:`validate_names` for one list of claims (the entry's, or those under one reading)."""
    earlier = []
    for claim in claims:
        for chk in claim["checks"]:
            where = f"{fid}: claim {claim['id']!r}"
            if chk["fn"] not in CHECKS and chk["fn"] not in CLAIM_LEVEL:
                raise ClaimError(f"{where} uses unknown check {chk['fn']!r}; "
                                 f"known: {', '.join(sorted([*CHECKS, *CLAIM_LEVEL]))}")
            args = chk.get("args", {})
            if chk["fn"] in CHECKS:
                unknown = sorted(set(args) - check_arguments(chk["fn"]))
                if unknown:
                    raise ClaimError(f"{where}: check {chk['fn']!r} has no argument(s) {unknown}; its arguments: "
                                     f"{', '.join(sorted(check_arguments(chk['fn'])))}")
                check_args(where, chk["fn"], args)
            if chk["fn"] == "premise" and args.get("claim") not in earlier:
                raise ClaimError(f"{where}: its premise must name an earlier claim of the figure; earlier: {earlier}")
            if chk["fn"] == "premise" and (set(args) - {"claim", "if_failed"}
                                           or args.get("if_failed", INCONCLUSIVE) != INCONCLUSIVE):
                raise ClaimError(f"{where}: premise takes claim and, optionally, if_failed: inconclusive; got {args}")
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

