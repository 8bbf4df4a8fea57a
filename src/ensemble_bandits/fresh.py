"""Fresh sequential studies run look by look (registry ``looks: [{claims, start, n}]``, docs/sequential.md).

A study on fresh seeds decides its claims on the seeds ``start`` .. ``start + n_k - 1`` alone (the
figure's own seeds 0 .. start - 1 planned it and decided its fixed-seed verdict; they are not looked
at again).  Its seeds are new seed ranges of the study's curves: a resolved series of such a curve
runs ``start + n_k`` seeds, its blocks cut at the study's looks (``cuts``), so the figure's own run
files and committed archive are reused as they are (an archive holding a cell's first seeds supplies
them, and the blocks after them are simulated: :func:`archive.usable`) and the DAG only grows.  The
figure's table, plot and other claims keep its own seeds; the claims step reads the fresh seeds from
the figure's archive (:func:`fresh_rows`).

A study's look is a target (config ``look``): ``look=k`` takes every fresh study of the figure to look
k, ``look='{claim: k}'`` only the study of that claim; without ``look`` each study stays at the look
its record states (none before its first look: the figure is then exactly as without a plan).  Look
k > 1 gives the seeds up to n_k only to the curves that a claim left open at look k - 1 names (its
``continue``); the others keep the seeds they stopped at.  The figure (its record and its archive's
metadata) states ``fresh``: per study that has run a look, its claims, start, look k of K and each
curve's seed end (so that a rebuild from the committed archive alone is that look's figure).
"""
from __future__ import annotations

from .plans import Study, studies, study_curves
from .registry import RegistryError


def fresh_studies(fig: dict) -> list:
    """The fresh studies of a resolved figure that it can run: those starting right after its seeds."""
    return [s for s in studies(fig["entry"]) if s.fresh and s.start == int(fig["seeds"])]


def at_looks(fig: dict, request=None, record: dict | None = None, archived=None) -> dict:
    """The resolved figure ``fig`` with its fresh studies at the looks ``request`` asks (None: those they
    ran, as its ``record`` states, or without one its archive, ``archived``: archive.fresh_state; an int:
    every study at that look; {claim id: k}: the study of that claim), each study's curves extended to
    its seeds (unchanged where no study has run a look)."""
    states = (record or {}).get("fresh", []) if record else archived or []
    ran = {(tuple(st["claims"]), int(st["start"])): st for st in states if isinstance(st, dict)}
    states = []
    for study in fresh_studies(fig):
        done = ran.get((study.claims, study.start))
        k = _wanted(study, request, int(done["k"]) if done else 0)
        if k:
            states.append(_state(fig, study, k, done, record))
    if not states:
        return fig
    ends, cuts = {}, set()
    for st, study in states:
        cuts |= {study.start, *(study.start + n for n in study.n)}
        for curve, end in st["seeds"].items():
            ends[curve] = max(ends.get(curve, 0), end)
    series = []
    for s in fig["series"]:
        if "reading" not in s and s["curve"] in ends:
            if int(s["seeds"]) != int(fig["seeds"]):
                raise RegistryError(f"figure {fig['id']!r}: curve {s['curve']!r} runs {s['seeds']} seeds, not the "
                                    f"figure's {fig['seeds']}: its fresh seeds would leave a gap")
            s = dict(s, seeds=ends[s["curve"]], cuts=sorted(cuts))
        series.append(s)
    return {**fig, "series": series, "fresh": [st for st, _ in states]}


def _wanted(study: Study, request, done: int) -> int:
    """The look ``request`` asks of ``study``, which has run look ``done`` (0: none)."""
    if isinstance(request, dict):
        asked = [request[c] for c in study.claims if c in request]
        return int(asked[0]) if asked else done
    return done if request is None else int(request)


def _state(fig, study: Study, k: int, done: dict | None, record) -> tuple:
    """(state, study) of ``study`` at look ``k``: {"claims", "start", "k", "of", "seeds": {curve: end}}."""
    where = f"figure {fig['id']!r}, the study of {list(study.claims)}"
    d = int(done["k"]) if done else 0
    if not 1 <= k <= study.K:
        raise RegistryError(f"{where}: look {k} is not a look of its plan ({study.K} looks at "
                            f"{', '.join(map(str, study.n))} fresh seeds)")
    if k == d:
        seeds = {c: int(e) for c, e in done["seeds"].items()}
    elif k == d + 1:
        seeds = _next_seeds(fig, study, k, done, record, where)
    else:
        raise RegistryError(f"{where}: look {k} needs the record of look {k - 1}, and the figure's record is of "
                            f"{f'look {d}' if d else 'no look'}: build look {d + 1} first (--config look={d + 1})")
    return {"claims": list(study.claims), "start": study.start, "k": k, "of": study.K, "seeds": seeds}, study


def _next_seeds(fig, study, k, done, record, where) -> dict:
    """Each curve's seed end at look ``k`` after look ``k - 1`` (``done``; None before look 1)."""
    end = study.start + study.n[k - 1]
    if done is None:
        named = study_curves(fig["entry"], study)
        return {c: end for c in fig["curves"] if named is None or c in named}
    claims = [c for c in (record or {}).get("claims", []) if c.get("id") in study.claims]
    going = {curve for c in claims if c.get("look_status") == "undecided" for curve in c.get("continue", [])}
    if not going:
        raise RegistryError(f"{where}: its claims were settled at look {k - 1} (decided or futile): no look {k}")
    before = {c: int(e) for c, e in done["seeds"].items()}
    return {c: end if c in going and e == study.start + study.n[k - 2] else e for c, e in before.items()}


def fresh_rows(fig: dict, archive_path):
    """The rows of the figure's fresh seeds (seed >= its own seeds) in its long table, from the
    archive its aggregate job wrote (the claims step's input: the figure's table keeps its own seeds)."""
    from .aggregate import figure_table
    from .archive import cells_of, read_cells

    table = figure_table(fig, 1, frames=read_cells(archive_path, fig, sorted(cells_of(fig))))
    return table[table["seed"] >= int(fig["seeds"])].reset_index(drop=True)
