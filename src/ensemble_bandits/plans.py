"""A figure's planned looks (registry ``looks:``, docs/sequential.md): the group-sequential studies
of its claims, the seeds each look adds, and what a look costs.

Two forms in the registry:

    looks: [10, 20, 50]          one study of every claim on the figure's own seeds 0..49, planned
                                 before the figure's first paper run (its last look is its ``seeds``)

    looks:                       studies on fresh seeds, each deciding some claims: seeds
      - {claims: [posterior], start: 100, n: [44, 88, 176, 352]}    start .. start + n_K - 1

A study on fresh seeds starts at or after the figure's paper seeds (the seeds already run are used
only to plan it: option 1 of docs/sequential.md), so its error is the design's 2.5 %.  Several
studies of one figure (claims with different plans) share the same fresh seeds: every study's look
k uses the seeds start .. start + n_k - 1, a prefix of one seed sequence, and each claim is decided
by its own study's boundaries at its own looks.  A claim is in at most one study.

A plan on the figure's own seeds applies where the figure runs them (paper scale, or a reduced
scale whose ``seeds`` override keeps them): the workflow builds it look by look (config ``look``,
:func:`at_look`) and the claims step decides its claims at the looks (:func:`decided_in_looks`).
Fresh studies are planned at paper scale and run look by look where the figure runs the seeds
before ``start`` (ensemble_bandits.fresh); until a study's first look, its next look's seeds and
estimated CPU time are shown (REPORT.md's "next look planned", ``cli estimate``).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import sequential as seq
from .registry import MAX_SEEDS, RegistryError, shared_cells

SCALE = "paper"     # the scale whose seeds the plans count


@dataclass(frozen=True)
class Study:
    """Claims decided in looks at ``n`` seeds (cumulative, increasing), on seeds ``start`` onwards."""
    claims: tuple
    start: int
    n: tuple

    @property
    def design(self) -> seq.Design:
        return seq.Design(self.n)

    @property
    def K(self) -> int:
        return len(self.n)

    def seeds(self, k: int) -> tuple:
        """The seeds look ``k`` (1-based) adds: [first, end)."""
        return (self.start + (self.n[k - 2] if k > 1 else 0), self.start + self.n[k - 1])

    @property
    def fresh(self) -> bool:
        """A new study on seeds after those the figure has run (not the figure's own seeds)."""
        return self.start > 0


def studies(entry: dict) -> list:
    """The studies of a registry entry's ``looks`` (none without it); assumes :func:`check_looks`."""
    looks = entry.get("looks")
    if not looks:
        return []
    if all(isinstance(n, int) for n in looks):
        return [Study(tuple(c["id"] for c in entry.get("claims", [])), 0, tuple(looks))]
    return [Study(tuple(s["claims"]), int(s["start"]), tuple(s["n"])) for s in looks]


def study_of(entry: dict, claim_id: str):
    """The study that decides ``claim_id`` of ``entry``, or None."""
    return next((s for s in studies(entry) if claim_id in s.claims), None)


def check_looks(fid: str, entry: dict) -> None:
    """RegistryError (one line naming the figure) unless the entry's ``looks`` is a sound plan: looks
    increasing seed counts >= 2; the own-seeds form ending at the figure's ``seeds``; fresh studies
    starting at or after them; known claims, each in at most one study, and only claims the look rule
    can decide (no premise or seed-block checks: claims.looks.LOOKS_REFUSE)."""
    from .claims.looks import LOOKS_REFUSE

    if "looks" not in entry:
        return
    where = f"figure {fid!r}, key looks"
    looks = entry["looks"]
    if not isinstance(looks, list) or not looks:
        raise RegistryError(f"{where}: give a list of seed counts ([10, 20, 50]) or of studies "
                            "({claims: [...], start: S, n: [...]})")
    seeds = int(entry.get("seeds", 1))
    own = all(isinstance(n, int) and not isinstance(n, bool) for n in looks)
    if not own and not all(isinstance(s, dict) for s in looks):
        raise RegistryError(f"{where}: mixes seed counts and studies; use one form")
    for s in studies(entry):
        try:
            seq.Design(s.n)
        except ValueError as err:
            raise RegistryError(f"{where}: {err}") from None
        if own and s.n[-1] != seeds:
            raise RegistryError(f"{where}: the last look ({s.n[-1]}) must be the figure's seeds ({seeds}): a plan "
                                f"on the figure's own seeds is its seeds in looks (for more seeds, plan a study "
                                f"on fresh seeds: {{claims, start: {seeds}, n}})")
        if not own and s.start < seeds:
            raise RegistryError(f"{where}: a study of {list(s.claims)} starts at seed {s.start}, inside the "
                                f"figure's {seeds} seeds already planned; fresh seeds start at {seeds} or later")
        if s.start + s.n[-1] > MAX_SEEDS:
            raise RegistryError(f"{where}: seeds up to {s.start + s.n[-1]:,} is more than {MAX_SEEDS:,}; a typo?")
    named = [c for s in studies(entry) for c in s.claims]
    claims = {c["id"]: c for c in entry.get("claims", [])}
    if not named:
        raise RegistryError(f"{where}: plans looks for no claim (the figure has no claims)")
    unknown = [c for c in named if c not in claims]
    if unknown:
        raise RegistryError(f"{where}: claim(s) {unknown} are not claims of the figure; claims: {sorted(claims)}")
    twice = sorted({c for c in named if named.count(c) > 1})
    if twice:
        raise RegistryError(f"{where}: claim(s) {twice} in more than one study; a claim is decided by one plan")
    for cid in named:
        level = [chk["fn"] for chk in claims[cid]["checks"] if chk["fn"] in LOOKS_REFUSE]
        if level:
            raise RegistryError(f"{where}: claim {cid!r} uses {level[0]!r}, which the look rule cannot decide "
                                "(docs/sequential.md); leave it out of the plan")


def study_curves(entry: dict, study: Study) -> list:
    """The curve labels the study's claims name (None, every curve, when a check names none)."""
    from .claims.evaluate import check_curves

    claims = {c["id"]: c for c in entry.get("claims", [])}
    names, every = [], False
    for cid in study.claims:
        for chk in claims[cid]["checks"]:
            if chk["fn"] == "after_round":      # a condition on the horizon: it names no curve
                continue
            got = check_curves(chk)
            every |= not got
            names += got
    return None if every else list(dict.fromkeys(names))


def range_blocks(first: int, end: int, per_job: int) -> list:
    """Seed blocks [a, b) covering [first, end), cut at multiples of ``per_job`` (as the figure's own
    blocks are, so that a later look's blocks line up with the seeds' usual jobs)."""
    cuts = sorted({first, end, *range(first - first % per_job + per_job, end, per_job)})
    return list(zip(cuts, cuts[1:]))


def look_cost(fig: dict, study: Study, k: int, per_job: int, curves=None) -> float:
    """Estimated CPU seconds of look ``k`` of ``study`` on the resolved paper-scale figure ``fig``: its
    new seeds for the series of ``curves`` (default: every curve the study's claims name; at a later
    look, the curves that continue; a reading's series are not the study's), by the cost model
    (costs.cell_cost_seconds)."""
    from .costs import cell_cost_seconds

    if curves is None:
        curves = study_curves(fig["entry"], study)
    shared = shared_cells([fig])
    first, end = study.seeds(k)
    total = 0.0
    for s in fig["series"]:
        b = min(end, s["seeds"]) if not study.fresh else end    # a curve of fewer seeds stops at those
        if "reading" not in s and (curves is None or s["curve"] in curves) and b > first:
            total += sum(cell_cost_seconds(s["cell"], y - x, (fig["scale"], s["key"]) in shared)
                         for x, y in range_blocks(first, b, per_job))
    return total


def look_costs(fig: dict, study: Study, per_job: int) -> list:
    """Estimated CPU seconds of each look of ``study`` (every curve of its claims going on)."""
    return [look_cost(fig, study, k, per_job) for k in range(1, study.K + 1)]


def next_look(claim: dict, study: Study):
    """(k, n) of the next look of ``study`` for a claim's record entry, or None when none is due.  A
    record decided by looks states its ``look`` (k of K) and ``look_status``; a record without them is
    before look 1 (a fresh study not yet run: its verdict is the fixed-seed test's, unchanged)."""
    done = int(claim.get("look") or 0)
    if done >= study.K or claim.get("look_status") in ("decided", "futile"):
        return None
    return done + 1, study.n[done]


def planned_notes(records: list, entries: dict, figs: dict, per_job: int) -> dict:
    """{(figure id, claim id): note} for the inconclusive claims of ``records`` that a fresh study plans
    and whose next look has not run: {"look", "looks", "n", "first", "end", "seconds"} (the cost of the
    curves the last look left open, every curve of the claim before look 1); ``figs``: id -> the
    resolved paper-scale figure (for the cost)."""
    notes = {}
    for rec in records:
        entry = entries.get(rec["id"], {})
        for c in rec.get("claims", []):
            study = study_of(entry, c["id"]) if entry else None
            due = next_look(c, study) if study and study.fresh and c.get("status") == "inconclusive" else None
            if due:
                k, n = due
                first, end = study.seeds(k)
                going = c.get("continue") if c.get("look") else None      # after a look: its open curves
                notes[rec["id"], c["id"]] = {"look": k, "looks": study.K, "n": n, "first": first, "end": end,
                                             "seconds": look_cost(figs[rec["id"]], study, k, per_job, going)}
    return notes


def planned_text(note: dict) -> str:
    """REPORT.md's words for a planned look that has not run."""
    from .costs import format_cpu_time

    return (f"next look planned: look {note['look']} of {note['looks']}, n = {note['n']} fresh seeds "
            f"({note['first']}–{note['end'] - 1}; a new sequential study, error 2.5 %), "
            f"≈ {note['seconds'] / 3600:.2f} CPU-h ({format_cpu_time(note['seconds'])}, cost model)")


def own_study(entry: dict, seeds: int):
    """The study of ``entry`` on the figure's own seeds when the figure, resolved at some scale, runs
    its ``seeds`` seeds (paper scale, or a reduced scale that keeps them), else None."""
    own = [s for s in studies(entry) if not s.fresh]
    return own[0] if own and own[0].n[-1] == int(seeds) else None


def at_look(fig: dict, k: int, record: dict | None = None) -> dict:
    """The resolved figure ``fig`` at look ``k`` of its own-seeds study (unchanged without one): each
    curve's seeds are those of look ``k`` if its claims needed them after look k - 1 (the ``continue``
    curves of that look's record, ``record``), else those it stopped at; every series' blocks are cut
    at the looks (``cuts``), so look k's run files are look k - 1's plus new seed ranges.  ``k`` None:
    the look ``record`` states (:func:`recorded_look`: a figure built again without ``look`` is its
    committed look redrawn, not its next), or without one every curve at every seed (the last look, no
    curve stopped).  The figure states ``look``: k, K and the seeds of each curve (the record keeps
    it, to plan the next look)."""
    study = own_study(fig["entry"], fig["seeds"])
    if study is None:
        return fig
    fid = fig["id"]
    curves = [c for c in fig["curves"]]
    if k is None:
        k = recorded_look(study, record)
    if k is None:
        seeds = {c: study.n[-1] for c in curves}
        k = study.K
    elif not 1 <= int(k) <= study.K:
        raise RegistryError(f"figure {fid!r}: look {k} is not a look of its plan ({study.K} looks at "
                            f"{', '.join(map(str, study.n))} seeds)")
    elif int(k) == 1:
        seeds = {c: study.n[0] for c in curves}
    else:
        seeds = _continued(fid, study, int(k), curves, record)
    k = int(k)
    series = [dict(s, seeds=min(s["seeds"], seeds.get(s["curve"], study.n[k - 1])), cuts=list(study.n[:-1]))
              for s in fig["series"]]
    return {**fig, "series": series, "look": {"k": k, "of": study.K, "seeds": seeds}}


def recorded_look(study: Study, record: dict | None) -> int | None:
    """The look of ``study`` that ``record`` (the figure's record) states, or None: no
    record, or its ``look`` is of another plan, or malformed (k not one of the K looks, a curve's
    seeds not one of the looks' seed counts)."""
    look = (record or {}).get("look")
    if not isinstance(look, dict) or look.get("of") != study.K or not isinstance(look.get("seeds"), dict):
        return None
    k = look.get("k")
    if type(k) is not int or not 1 <= k <= study.K:
        return None
    if any(type(n) is not int or n not in study.n[:k] for n in look["seeds"].values()):
        return None
    return k


def _continued(fid, study, k, curves, record):
    """Each curve's seeds at look ``k`` > 1 from the figure's record (of look k - 1, or of look k
    itself when it is built again): RegistryError when the record is of no such look."""
    look = (record or {}).get("look")
    where = f"figure {fid!r}: look {k}"
    if not isinstance(look, dict) or look.get("of") != study.K or not isinstance(look.get("seeds"), dict):
        raise RegistryError(f"{where} needs the record of look {k - 1}, and the figure's record is "
                            f"{'absent' if record is None else 'of no look of this plan'}: build look {k - 1} first "
                            f"(--config look={k - 1})")
    if look.get("k") == k:
        return {c: int(look["seeds"].get(c, study.n[k - 1])) for c in curves}
    if look.get("k") != k - 1:
        raise RegistryError(f"{where} needs the record of look {k - 1}, and the figure's record is of look "
                            f"{look.get('k')}: build look {k - 1} first (--config look={k - 1}), or ask for look "
                            f"{look.get('k')} or {look.get('k') + 1 if isinstance(look.get('k'), int) else '?'}")
    going = {c for claim in record.get("claims", []) if claim.get("look_status") == "undecided"
             for c in claim.get("continue", [])}
    before = {c: int(look["seeds"].get(c, study.n[k - 2])) for c in curves}
    return {c: study.n[k - 1] if c in going and before[c] == study.n[k - 2] else before[c] for c in curves}


def decided_in_looks(entry: dict, table, results: list, seeds: int, fresh=()) -> list:
    """``results`` (claims.evaluate) with each claim of a study of the figure decided by the
    group-sequential rule at its looks (claims.looks.run_looks): the study on the figure's own seeds
    (``looks: [...]``) over the seeds the table has, at paper scale; a fresh study over its own fresh
    seeds alone, ``fresh``: [(its state in the resolved figure, ensemble_bandits.fresh; the rows of the
    fresh seeds)].  Its status is the look's verdict and its record states the look, n, the boundary
    (z and nominal p), the look's status (decided / undecided / futile), the curves that still need
    seeds, and for a fresh study its first seed.  Other claims, and figures without such a study:
    ``results`` itself, unchanged (a fresh study before its first look: the fixed-seed verdict)."""
    from .readings import primary_rows

    own = own_study(entry, seeds)
    runs = [(own, primary_rows(table), None)] if own else []
    for state, rows in fresh:
        study = Study(tuple(state["claims"]), int(state["start"]), tuple(study_of(entry, state["claims"][0]).n))
        rows = primary_rows(rows)
        runs.append((study, rows[rows["seed"] < study.start + study.n[state["k"] - 1]], study.start))
    decided = {}
    for study, rows, first in runs:
        decided.update(_decided(entry, study, rows, first, results))
    return [decided.get(r["id"], r) for r in results]


def _decided(entry, study, rows, first, results) -> dict:
    """{claim id: result} of the study's claims decided at its looks on ``rows`` (``first``: the first
    fresh seed, None on the figure's own seeds)."""
    from .claims.core import seeds_record
    from .claims.looks import DECIDED, claim_comparisons, curves_to_continue, run_looks

    claims = {c["id"]: c for c in entry.get("claims", [])}
    available = int(rows["seed"].nunique())
    out = {}
    for res in results:
        if res["id"] not in study.claims or res["status"] == "reported" or available < study.n[0]:
            continue
        at = {}

        def comparisons(n, claim=claims[res["id"]]):
            at[n] = claim_comparisons(rows, claim, n)
            return at[n]

        d = run_looks(study.design, comparisons, available=available)
        comps = at[d.n]
        look = {"look": d.look, "looks": d.looks, "n": d.n, "z": round(d.boundary, 4), "p": float(f"{d.nominal:.4g}"),
                "look_status": d.status, **({"first": first} if first is not None else {}),
                "continue": sorted(curves_to_continue([(d, [c.curves for c in comps])]))}
        numbers = "; ".join(c.text or c.label for c in comps) + f" — {d.summary} — {look_words(look)}"
        new = {k: v for k, v in res.items() if k not in ("seeds_to_decide", "decisive")}
        new.update(status=d.verdict, numbers=numbers, **look)
        if d.status != DECIDED and d.seeds_needed is not None:
            new["seeds_to_decide"] = seeds_record(d.seeds_needed)
        out[res["id"]] = new
    return out


def look_words(c: dict) -> str:
    """REPORT.md's words for a claim decided in looks (a record's claim with ``look``): "decided at
    look k of K (n = ...)", "inconclusive (budget)" or "inconclusive (futile)", with its boundary."""
    seeds = f"{c['n']} fresh seeds, {c['first']}–{c['first'] + c['n'] - 1}" if "first" in c else c["n"]
    at = f"look {c['look']} of {c['looks']} (n = {seeds}; boundary z = {c['z']:.3f}, nominal p = {c['p']:.3g})"
    if c["look_status"] == "decided":
        return f"decided at {at}"
    if c["look_status"] == "futile":
        return f"inconclusive (futile) at {at}"
    if c["look"] == c["looks"]:
        return f"inconclusive (budget) at {at}"
    return f"undecided at {at}: the next look has not run"
