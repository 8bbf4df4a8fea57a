"""Readings: a figure's labelled alternatives to the paper's text, each decided beside it.

Where the paper's text and the authors' code differ, or a sentence reads two ways, a registry entry
declares named ``readings``; the primary reading is the entry itself (the paper's text as the
registry states it).  A reading is a set of overrides applied on top of the entry::

    readings:
      once:                                  # the reading's name (lower case, digits, dashes)
        label: warm-up once                  # how plots and REPORT.md name it
        says: the G-optimal warm-up is done once, not in every epoch
        curves: ["GLM-ES-DT*"]               # optional: glob patterns of the curves it changes
        panels: ["Logistic*"]                # optional: glob patterns of the panels it changes
        agent: {dt_warmup: once}             # merged into those curves' agents (new cells)
        env: {...}                           # merged into those panels' environments (new cells)
        overrides:                           # instead of curves/panels/agent/env: several groups;
          - {panels: ["Quadratic"], agent: {G: 4}}        # the first that matches a (panel, curve)
          - {panels: ["Vector-quadratic"], agent: {G: 20}}  # applies
        claims:                              # optional: a claim's checks under this reading
          dt-competitive: {checks: [...]}
        seeds: 5                             # optional: its cells run fewer seeds than the figure's
                                             # (e.g. the authors' code's 5, where that saves time):
                                             # REPORT.md prints the count beside its verdicts
        partial: <the scope it decides>      # optional: it decides the claims on part of their scope
                                             # only (e.g. "the Quadratic panel only"): shown beside
                                             # its verdict, and a finding it reproduces is not counted
                                             # as reproduced under another reading
        pending: <why>                       # optional: declared, its runs not made yet (a paper run
                                             # in parts): it adds no series, its claims are "not measured";
                                             # its cells are listed as the figure's ``pending_series``

A reading with ``agent`` or ``env`` overrides adds series: each changed curve again, as its own cells
(ordinary cells: cached, shared, split into jobs like any other), labelled "<curve> [<label>]" so a
plot draws them as extra curves.  Its claims are decided on the figure's rows with the reading's
series in place of the curves they change; a reading with only ``claims`` reads the same runs
another way.  Pure functions (no import of the analysis code), used by the registry and the claims.
"""
from __future__ import annotations

import copy
import fnmatch
import re

NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
PRIMARY = ""            # the ``reading`` column of the primary reading's rows
ROW_COLUMNS = ("reading", "base_curve")     # a figure table's marks of whose row is which (figure_table)


def readings_of(entry: dict) -> dict:
    return entry.get("readings") or {}


def curve_label(curve: str, reading: dict, name: str) -> str:
    return f"{curve} [{reading.get('label', name)}]"


def groups(reading: dict) -> list:
    """A reading's override groups: its ``overrides`` list, or its own curves/panels/agent/env."""
    if reading.get("overrides"):
        return reading["overrides"]
    own = {k: reading[k] for k in ("curves", "panels", "agent", "env") if k in reading}
    return [own] if own.get("agent") or own.get("env") else []


def changes_runs(reading: dict) -> bool:
    return any(g.get("agent") or g.get("env") for g in groups(reading))


def _matches(patterns, label: str) -> bool:
    return patterns is None or any(fnmatch.fnmatchcase(label, p) for p in patterns)


def group_for(reading: dict, panel: str, curve: str):
    """The override group of ``reading`` that changes the runs of (``panel``, ``curve``), or None."""
    return next((g for g in groups(reading)
                 if (g.get("agent") or g.get("env")) and _matches(g.get("curves"), curve)
                 and _matches(g.get("panels"), panel)), None)


def reading_series(entry: dict, series: list, key_of, pending: bool = False) -> list:
    """The series the entry's readings add to the primary ``series`` (``key_of(cell)``: a cell's key);
    with ``pending``, those its pending readings will add once run (their cells can be run by key).
    Where the plot draws a line per value of a grid variable (``plot: {hue: <var>}``, e.g. epp-fig10's
    method), a reading's series takes that value labelled like its curve ("Ensemble++ [authors' code]"):
    its own line, not pooled with the primary's seeds at the same x."""
    out = []
    hue = (entry.get("plot") or {}).get("hue")
    for name, r in readings_of(entry).items():
        if bool(r.get("pending")) != pending:
            continue
        for s in series:
            g = group_for(r, s["panel"], s["curve"])
            if "agent" not in s["cell"] or g is None:
                continue
            cell = copy.deepcopy(s["cell"])
            cell["agent"] = {**cell["agent"], **(g.get("agent") or {})}
            cell["env"] = {**cell["env"], **(g.get("env") or {})}
            svars = dict(s["vars"])
            if hue in svars:
                value = svars[hue] if isinstance(svars[hue], str) else f"{hue} = {svars[hue]}"
                svars[hue] = curve_label(value, r, name)
            out.append({**s, "curve": curve_label(s["curve"], r, name), "vars": svars, "cell": cell,
                        "seeds": min(int(r.get("seeds", s["seeds"])), s["seeds"]),
                        "key": key_of(cell), "reading": name, "base_curve": s["curve"]})
    return out


def primary_rows(table):
    """The rows of the primary reading (every row of a figure without reading series)."""
    if "reading" not in table.columns:
        return table
    return table[table["reading"] == PRIMARY].drop(columns=list(ROW_COLUMNS))


def reading_rows(table, name: str):
    """The figure's rows under reading ``name``: the primary rows with the reading's series in place
    of the (panel, curve) they change, under the primary curve names."""
    if "reading" not in table.columns:
        return table
    mine = table[table["reading"] == name]
    replaced = set(zip(mine["panel"], mine["base_curve"]))
    base = table[table["reading"] == PRIMARY]
    keep = [(p, c) not in replaced for p, c in zip(base["panel"], base["curve"])]
    import pandas as pd

    mine = mine.assign(curve=mine["base_curve"])
    return pd.concat([base[keep], mine], ignore_index=True).drop(columns=list(ROW_COLUMNS))


def claims_under(claims: list, reading: dict) -> list:
    """The entry's claims with a reading's ``claims`` overrides in place."""
    over = reading.get("claims") or {}
    return [{**c, **over[c["id"]]} if c["id"] in over else c for c in claims]
