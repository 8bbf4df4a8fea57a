"""The figure registry and its expansion into cells and jobs: pure functions from YAML to figures,
cells and jobs (no import of the analysis code; checks that need the library are in
:mod:`validation`).

A registry entry (config/figures/<paper>.yaml) describes one figure or table id: caption,
plot kind, error band, paper-scale seeds and horizon, panels (environment specs) and
curves (agent specs), optional grids that expand templated specs, per-scale reductions
and claims.  :func:`resolve` turns an entry into concrete *cells* for one scale:

    cell = {"env": {...}, "agent": {...}, "horizon": T}      (or {"experiment": {...}})

A cell's key is a short hash of its canonical JSON, so a cell shared by several figures
is simulated once, and editing a hyper-parameter changes only the keys it touches.
"""
from __future__ import annotations

import copy
import hashlib
import itertools
import json
import re
from pathlib import Path

import yaml

from .papers import PREFIXES as PAPERS     # the one list of papers
from .paths import run_file
from .readings import NAME as READING_NAME
from .readings import changes_runs, reading_series, readings_of

SCALES = ("smoke", "default", "paper")
MAX_SEEDS = 100_000       # a guard against a typo (seeds: 10^9 would build an absurd job graph)
# Bounds of a YAML file once its aliases are expanded (the largest registry file has about 8,300
# nodes, 12 levels deep): an alias bomb or an alias inside its own anchor fails at once, in one line.
MAX_YAML_NODES = 200_000
MAX_YAML_DEPTH = 40
MAX_ID_LENGTH = 40        # ids become file names and command-line words
# A figure id: a paper prefix, a dash, then lower-case letters, digits and inner dashes (no spaces,
# "/", "..", quotes or shell characters: ids become file names and command-line words).
FIGURE_ID = re.compile(r"^(?=.{1,%d}$)(?:" % MAX_ID_LENGTH + "|".join(PAPERS) + r")-[a-z0-9]+(?:-[a-z0-9]+)*$")
# A `skip` pattern: the id characters plus the glob characters * ? [ ] !
SKIP_PATTERN = re.compile(r"^[a-z0-9*?\[\]!-]+$")
_FIELD = re.compile(r"^\{(\w+)\}$")
_ANY_FIELD = re.compile(r"\{(\w+)\}")


class RegistryError(ValueError):
    """A registry or config problem, with the figure id and key in the message."""


class _StrictMapping:
    """A safe YAML loader that refuses a mapping key given twice (plain PyYAML silently keeps the
    last one, so a figure id or a `seeds:` written twice would quietly replace the first), and a
    document larger than :data:`MAX_YAML_NODES` nodes or deeper than :data:`MAX_YAML_DEPTH` levels
    once its aliases are expanded (anchors, aliases and ``<<:`` merge keys stay allowed)."""

    def construct_document(self, node):
        _expanded_size(node, {}, 0)
        return super().construct_document(node)

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":      # `<<: *anchor` may repeat
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    seen = first.setdefault(key, key_node)
                except TypeError:                                 # unhashable: PyYAML reports it
                    continue
                if seen is not key_node:
                    mark = key_node.start_mark
                    raise RegistryError(f"{mark.name}, line {mark.line + 1}: duplicate key {key!r} "
                                        f"(first at line {seen.start_mark.line + 1})")
        return super().construct_mapping(node, deep=deep)


def _expanded_size(node, sizes: dict, depth: int) -> int:
    """The number of nodes of ``node`` with every alias expanded (counted once per distinct node, so
    in linear time); RegistryError past the bounds, naming the line."""
    if depth > MAX_YAML_DEPTH:
        raise RegistryError(f"{_at(node)}: nested more than {MAX_YAML_DEPTH} levels deep once its aliases are "
                            "expanded (an alias inside its own anchor?)")
    if id(node) not in sizes:
        children = node.value if isinstance(node, yaml.SequenceNode) else \
            [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else []
        sizes[id(node)] = 1 + sum(_expanded_size(child, sizes, depth + 1) for child in children)
        if sizes[id(node)] > MAX_YAML_NODES:
            raise RegistryError(f"{_at(node)}: more than {MAX_YAML_NODES:,} values once its aliases are expanded "
                                "(an alias bomb?); write the values out or use fewer nested aliases")
    return sizes[id(node)]


def _at(node) -> str:
    return f"{node.start_mark.name}, line {node.start_mark.line + 1}"


class _StrictLoader(_StrictMapping, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """The strict loader on libyaml's parser (about 5x faster) where PyYAML was built with it."""


class _StrictPyLoader(_StrictMapping, yaml.SafeLoader):
    """The strict loader in pure Python: its errors say more (e.g. which alias is undefined)."""


def load_yaml(path) -> dict:
    """A YAML file, parsed strictly: a key given twice in one mapping is an error naming the file
    and both lines (RegistryError), and so is a file that is not valid YAML."""
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.load(fh, Loader=_StrictLoader) or {}
    except yaml.YAMLError as err:
        raise RegistryError(f"{path}: not valid YAML: {_fuller_yaml_error(path) or err}") from None
    except UnicodeDecodeError as err:
        raise RegistryError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start}); save it as UTF-8") from None
    except OSError as err:
        raise RegistryError(f"{path}: cannot be read ({err.strerror})") from None


def _fuller_yaml_error(path):
    """The pure-Python parser's message for a file libyaml refused (None if it reads the file)."""
    try:
        with open(path, encoding="utf-8") as fh:
            yaml.load(fh, Loader=_StrictPyLoader)
    except yaml.YAMLError as err:
        return err
    return None


def match_ids(patterns, ids, what="pattern") -> list:
    """The ids (in order) matching any of the glob ``patterns``.  A pattern that matches no id is
    an error naming it and the known ids (a typo in `skip` would otherwise skip nothing)."""
    import fnmatch

    ids = list(ids)
    for pat in patterns:
        if not SKIP_PATTERN.match(str(pat)):
            raise RegistryError(f"{what} {str(pat)!r} is not an id pattern: use lower-case letters, "
                                "digits, '-' and the glob characters * ? [ ] !")
        if not any(fnmatch.fnmatchcase(i, str(pat)) for i in ids):
            raise RegistryError(f"{what} {str(pat)!r} matches no figure id; known ids: {', '.join(ids)}")
    return [i for i in ids if any(fnmatch.fnmatchcase(i, str(pat)) for pat in patterns)]


def select_ids(patterns, entries) -> list:
    """The ids of ``entries`` matching the glob ``patterns`` given on a command line (all if none)."""
    return match_ids(patterns, sorted(entries), "id or pattern") if patterns else sorted(entries)


def load_project(configfile, config_dir, schema_path=None, scales_json=None) -> tuple:
    """The workflow's config with the library's defaults (``scales_json``: per-scale caps as JSON,
    overriding its ``scales``) and the registry of ``config_dir``, validated: what the user commands read."""
    config = with_defaults(load_yaml(configfile))
    if scales_json:
        config["scales"] = json.loads(scales_json)
    return config, load_registry(config_dir, schema_path)


def load_registry(config_dir="config", schema_path=None) -> dict:
    """All figure entries of config/figures/*.yaml, validated against the registry schema
    (default: workflow/schemas/registry.schema.yaml next to ``config_dir``)."""
    import jsonschema

    if schema_path is None:
        schema_path = Path(config_dir).resolve().parent / "workflow" / "schemas" / "registry.schema.yaml"
    if not Path(schema_path).exists():
        raise RegistryError(f"registry schema not found at {schema_path}")
    schema = load_yaml(schema_path)
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)                  # once: jsonschema.validate checks it per call
    validator = validator_class(schema)
    registry = {}
    for path in sorted(Path(config_dir, "figures").glob("*.yaml")):
        document = load_yaml(path)
        if not isinstance(document, dict):
            raise RegistryError(f"{path}: the top level must be a mapping of figure ids to entries, "
                                f"not a {type(document).__name__}")
        for fid, entry in document.items():
            check_figure_id(fid, path)
            if fid in registry:
                raise RegistryError(f"figure id {fid!r} defined twice (second time in {path})")
            err = jsonschema.exceptions.best_match(validator.iter_errors(entry))   # as jsonschema.validate
            if err is not None:
                where = "/".join(str(p) for p in err.absolute_path) or "(entry)"
                message = err.message.replace(repr(err.instance), shown(repr(err.instance))) \
                    if isinstance(err.instance, str) else err.message          # a pasted page stays one line
                raise RegistryError(f"{path}: figure {fid!r}, key {where}: {shown(message, 400)}") from None
            bad = non_finite(entry)
            if bad is not None:
                raise RegistryError(f"{path}: figure {fid!r}, key {bad[0]}: {bad[1]} is not allowed: a finite number")
            check_readings(fid, entry, path)
            check_unique_claims(fid, entry, path)
            entry = dict(entry)
            entry["id"] = fid
            entry.setdefault("paper", fid.split("-")[0])
            registry[fid] = entry
    return registry


def check_figure_id(fid, where) -> None:
    """RegistryError unless ``fid`` is a well-formed figure id (:data:`FIGURE_ID`)."""
    if not isinstance(fid, str) or not FIGURE_ID.match(fid):
        raise RegistryError(f"{where}: figure id {shown(repr(fid))} is not allowed: an id is a paper prefix "
                            f"({', '.join(PAPERS)}), a dash, then lower-case letters, digits and dashes "
                            f"(e.g. phe-fig1), at most {MAX_ID_LENGTH} characters")


def shown(text: str, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters for a one-line message (a pasted page stays one line)."""
    return text if len(text) <= limit else f"{text[:limit - 25]}... ({len(text):,} characters)"


def check_unique_claims(fid, entry, where) -> None:
    """Claim ids are unique in a figure (a second claim of one id would replace the first's verdict)."""
    ids = [c["id"] for c in entry.get("claims", [])]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise RegistryError(f"{where}: figure {fid!r}: claim id(s) {twice} given twice; a claim id names one claim")


def check_readings(fid, entry, where) -> None:
    """A figure's readings: well-formed names, each says what it changes, overrides only claims the
    figure has, and changes runs or claims."""
    claims = {c["id"] for c in entry.get("claims", [])}
    for name, r in readings_of(entry).items():
        what = f"{where}: figure {fid!r}, reading {name!r}"
        if not READING_NAME.match(str(name)):
            raise RegistryError(f"{what}: a reading's name is lower-case letters, digits and dashes")
        unknown = sorted(set(r.get("claims") or {}) - claims)
        if unknown:
            raise RegistryError(f"{what} overrides claim(s) {unknown} that the figure does not have; "
                                f"claims: {sorted(claims)}")
        if not changes_runs(r) and not r.get("claims"):
            raise RegistryError(f"{what} changes nothing: give agent or env overrides, or claims")
        if "seeds" in r and not changes_runs(r):
            raise RegistryError(f"{what}: seeds applies to a reading's own cells, and it has none "
                                f"(give agent or env overrides)")


def non_finite(value, where=""):
    """(path, number) of the first NaN or infinity in ``value`` (a number, or lists and mappings of
    them; the path ``a/0/b``, "" for ``value`` itself), or None: NaN passes every ``<`` check, and
    infinity most, so neither is a valid setting anywhere."""
    import math
    import numbers

    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return None if math.isfinite(value) else (where, value)
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
    for key, item in items:
        found = non_finite(item, f"{where}/{key}" if where else str(key))
        if found is not None:
            return found
    return None


def substitute(obj, values: dict):
    """Replace "{var}" strings (typed) and format "... {var} ..." strings from ``values``."""
    if isinstance(obj, dict):
        return {k: substitute(v, values) for k, v in obj.items()}
    if isinstance(obj, list):
        return [substitute(v, values) for v in obj]
    if isinstance(obj, str):
        m = _FIELD.match(obj)
        if m and m.group(1) in values:
            return values[m.group(1)]
        if "{" in obj:
            try:
                return obj.format(**values)
            except (KeyError, IndexError):
                # some fields are not known here (e.g. a curve label using both its own and the
                # panel's grid variables): fill the known ones, leave the rest for a later pass
                return _ANY_FIELD.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values
                                      else m.group(0), obj)
    return obj


def _expand(items: list, grid_override: dict, fid: str, what: str) -> list:
    """Expand each panel/curve template over its grid (scale overrides replace grid values)."""
    out = []
    for item in items:
        grid = dict(item.get("grid", {}))
        for var in grid:
            if var in grid_override:
                grid[var] = grid_override[var]
        names = list(grid)
        for combo in itertools.product(*(grid[n] for n in names)):
            values = dict(zip(names, combo))
            values = {k: substitute(v, values) if isinstance(v, str) else v for k, v in values.items()}
            if not _matches(item.get("exclude", []), values):
                body = {k: v for k, v in item.items() if k not in ("grid", "exclude")}
                resolved = substitute(body, values)
                resolved["vars"] = values
                out.append(resolved)
    if not out and items:
        raise RegistryError(f"figure {fid!r}: every {what} was excluded by its grid")
    return out


def _matches(excludes: list, values: dict) -> bool:
    return any(all(values.get(k) == v for k, v in ex.items()) for ex in excludes)


def scale_settings(entry: dict, scale: str, defaults: dict) -> dict:
    """Seeds, horizon, grid and environment overrides of ``entry`` at ``scale`` (``env``: hyper-
    parameters merged into every panel's environment, e.g. a smaller corpus at smoke scale)."""
    if scale not in SCALES:
        raise RegistryError(f"unknown scale {scale!r}; known scales: {', '.join(SCALES)}")
    caps = dict(defaults.get(scale, {}) or {})
    over = dict((entry.get("scales") or {}).get(scale, {}) or {})
    seeds = over.get("seeds", min(entry.get("seeds", 1), caps.get("max_seeds", 10 ** 9)))
    horizon = over.get("horizon", min(entry.get("horizon", 1), caps.get("max_horizon", 10 ** 9)))
    return {"seeds": int(seeds), "horizon": int(horizon), "grid": over.get("grid", {}), "env": over.get("env", {})}


def cell_key(cell: dict) -> str:
    return hashlib.sha1(json.dumps(cell, sort_keys=True).encode()).hexdigest()[:12]


def resolve(entry: dict, scale: str, defaults: dict) -> dict:
    """Concrete figure at ``scale``: panels, curves and, per (panel, curve), the cell and its key."""
    fid = entry["id"]
    s = scale_settings(entry, scale, defaults)
    known = {v for item in [*entry.get("panels", []), *entry.get("curves", [])] for v in item.get("grid", {})}
    typos = sorted(set(s["grid"]) - known)
    if typos:
        raise RegistryError(f"figure {fid!r}, scales: {scale}: grid variable(s) {typos} are on no panel or curve "
                            f"grid; grid variables: {sorted(known)}")
    if s["seeds"] > MAX_SEEDS:
        raise RegistryError(f"figure {fid!r}: {s['seeds']:,} seeds at scale {scale} is more than {MAX_SEEDS:,}; "
                            f"a typo? (seeds is the number of independent runs per cell)")
    panels = _expand(entry.get("panels", [{"label": ""}]), s["grid"], fid, "panel")
    if s["env"]:
        panels = [dict(p, env={**p["env"], **s["env"]}) if "env" in p else p for p in panels]
    curves = _expand(entry.get("curves", []), s["grid"], fid, "curve")
    # a curve marked ``pending: <reason>`` (e.g. an agent that cannot play the environment yet) is
    # registered but not simulated at any scale; claims naming it are "not measured" (claims.evaluate)
    pending = {c["label"]: c["pending"] for c in curves if "pending" in c}
    curves = [c for c in curves if "pending" not in c]
    points = [(p["label"], _vars(p)) for p in panels]      # one label over a grid is one panel
    twice = sorted({f"{lab!r}{' at ' + v if v != '{}' else ''}" for lab, v in points if points.count((lab, v)) > 1})
    if twice:
        raise RegistryError(f"figure {fid!r}: panel label {twice[0]} given to more than one panel at scale {scale}; "
                            "a label names one panel (their rows would be merged)")
    series = []
    labels = [[] for _ in curves]                          # per curve template, its labels in the panels
    for panel, (i, curve) in itertools.product(panels, enumerate(curves)):
        if curve.get("panels") and panel["label"] not in curve["panels"]:
            continue
        curve = substitute(curve, panel["vars"])          # curves may use panel grid variables
        labels[i].append(curve["label"])
        where = f"figure {fid!r}, panel {panel['label']!r}, curve {curve['label']!r}"
        # a curve or panel may ask for fewer seeds / rounds than the figure; scale caps still apply
        horizon = min(_horizon(curve.get("horizon", panel.get("horizon", s["horizon"])), where), s["horizon"])
        if "experiment" in curve:
            cell = {"experiment": dict(curve["experiment"], env=panel["env"], horizon=horizon)}
        else:
            cell = {"env": panel["env"], "agent": curve["agent"], "horizon": horizon}
            timing = curve.get("timing", entry.get("timing"))
            repeats = curve.get("timing_repeats", entry.get("timing_repeats"))
            if timing == "unbatched":
                cell["timing"] = "unbatched"
                if repeats is not None:                   # else cells.TIMING_REPEATS
                    cell["timing_repeats"] = repeats
            elif repeats is not None:
                raise RegistryError(f"{where}: timing_repeats is for `timing: unbatched` cells only")
        series.append({"panel": panel["label"], "curve": curve["label"], "vars": {**panel["vars"], **curve["vars"]},
                       "seeds": min(int(curve.get("seeds", s["seeds"])), s["seeds"]), "cell": cell,
                       "key": cell_key(cell)})
    extra = reading_series(entry, series, cell_key)
    _one_curve_per_label(fid, series + extra)
    waiting = reading_series(entry, series, cell_key, pending=True)   # run by key, drawn once not pending
    curves = _unique([*(lab for labs in labels for lab in labs), *(x["curve"] for x in extra)])
    return {"id": fid, "scale": scale, "entry": entry, "seeds": s["seeds"], "horizon": s["horizon"],
            "panels": _unique(p["label"] for p in panels), "curves": curves,
            "series": series + extra, **({"pending_curves": pending} if pending else {}),
            **({"pending_series": waiting} if waiting else {})}


def _one_curve_per_label(fid: str, series: list) -> None:
    """RegistryError if two series of a panel carry one curve label at one grid point (two curve
    templates, or a reading's curve, of one label): their rows would be merged into one curve.  One
    label over a grid is one curve."""
    seen = set()
    for s in series:
        point = (s["panel"], s["curve"], _vars(s))
        if point in seen:
            at = f" at {point[2]}" if point[2] != "{}" else ""
            raise RegistryError(f"figure {fid!r}, panel {s['panel']!r}, curve {s['curve']!r}: two curves of the panel "
                                f"have this label{at}; a label names one curve (their rows would be merged)")
        seen.add(point)


def _vars(item: dict) -> str:
    return json.dumps(item["vars"], sort_keys=True, default=str)


def _horizon(value, where: str) -> int:
    """A curve's or panel's horizon (a number of rounds, after its grid is filled in): an integer, at least 1."""
    if isinstance(value, bool) or not isinstance(value, int) and not (isinstance(value, str) and value.isdigit()):
        raise RegistryError(f"{where}: horizon {value!r} is not allowed: an integer number of rounds")
    if int(value) < 1:
        raise RegistryError(f"{where}: horizon {value!r} is not allowed: at least 1")
    return int(value)


def without_datasets(fig: dict, absent, datasets_of) -> dict:
    """``fig`` without the series whose cell reads a dataset in ``absent`` (``datasets_of(cell)``
    names the datasets of a cell): the figure of an ``optional_data:`` entry built without those
    data.  ``absent_data`` lists the absent datasets that removed series, ``absent_panels`` the
    panels left without any series (the plot and the claims say "data absent" there)."""
    absent = set(absent)
    keep = [s for s in fig["series"] if not absent & set(datasets_of(s["cell"]))]
    if len(keep) == len(fig["series"]):
        return fig
    gone = sorted({n for s in fig["series"] for n in datasets_of(s["cell"]) if n in absent})
    left = {s["panel"] for s in keep}
    return {**fig, "series": keep, "absent_data": gone,
            "absent_panels": [p for p in fig["panels"] if p not in left]}


def _unique(labels):
    seen = []
    for lab in labels:
        if lab not in seen:
            seen.append(lab)
    return seen


def figure_document(fig: dict, per_job: int, stamps: dict | None = None) -> str:
    """The JSON a figure's jobs read (aggregate, claims): the resolved figure, the seeds per simulate
    job (which name its run files) and, given ``stamps`` ({key: stamp}, ``cells.figure_stamps``), the
    version of each cell's numbers (``algorithms``), so that no job re-reads or re-expands the registry
    or looks up an agent class to know what its run files must say."""
    doc = {**fig, "seeds_per_job": int(per_job), **({"algorithms": stamps} if stamps else {})}
    return json.dumps(doc, indent=1, sort_keys=True)


class FigureFileError(ValueError):
    """A resolved figure the workflow wrote cannot be read (the command line says it as it is)."""


def read_figure(path) -> dict:
    """A resolved figure as the workflow wrote it (rule resolve_figure: :func:`figure_document`)."""
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError) as err:
        raise FigureFileError(f"cannot read the resolved figure {path}: {err}") from None


def seed_blocks(n_seeds: int, per_job: int):
    """Aligned blocks [start, end) covering 0..n_seeds-1, so figures share block files."""
    per_job = max(1, int(per_job))
    return [(a, min(a + per_job, n_seeds)) for a in range(0, n_seeds, per_job)]


def series_blocks(series: dict, per_job: int):
    """The seed blocks of a resolved series: :func:`seed_blocks` of its seeds, each cut also at the
    seed counts of its ``cuts`` (the looks of a figure planned in looks, ensemble_bandits.plans), so
    that a later look's blocks are new and an earlier look's run files are reused as they are."""
    cuts = [c for c in series.get("cuts", ()) if 0 < c < series["seeds"]]
    if not cuts:
        return seed_blocks(series["seeds"], per_job)
    edges = sorted({0, series["seeds"], *cuts, *range(per_job, series["seeds"], max(1, int(per_job)))})
    return list(zip(edges, edges[1:]))


def figure_runs(fig: dict, per_job: int) -> list:
    """Run files a resolved figure needs."""
    files = []
    for s in fig["series"]:
        for a, b in series_blocks(s, per_job):
            files.append(run_file(fig["scale"], s["key"], a, b))
    return _unique(files)


def shareable(cell: dict) -> bool:
    """Whether ``cell`` may be played in a shared pass: an agent cell, neither a coupled experiment
    nor a timing cell."""
    return "experiment" not in cell and cell.get("timing") != "unbatched"


def shared_cells(figs: list) -> dict:
    """(scale, key) -> cell of the shareable cells of the resolved figures whose entry says
    ``shared_pass: true``: those the workflow plays in shared passes."""
    return {(fig["scale"], s["key"]): s["cell"] for fig in figs if fig["entry"].get("shared_pass")
            for s in fig["series"] if shareable(s["cell"])}


def shared_groups(figs: list, group_size: int) -> list:
    """The shared-pass jobs' cell groups (:mod:`ensemble_bandits.shared`) of :func:`shared_cells`,
    grouped by scale, environment spec and horizon, each group split into near-equal parts of at
    most ``group_size`` cells in key order.  A cell is in exactly one group per scale.
    Each group: {"id", "scale", "keys", "cells"}; the id is a hash of its scale and keys."""
    by_env = {}
    for (scale, key), cell in shared_cells(figs).items():
        env = (scale, json.dumps(cell["env"], sort_keys=True), int(cell["horizon"]))
        by_env.setdefault(env, {})[key] = cell
    groups = []
    for (scale, _, _), cells in sorted(by_env.items()):
        keys = sorted(cells)
        parts = -(-len(keys) // max(1, int(group_size)))
        for i in range(parts):
            part = keys[i * len(keys) // parts:(i + 1) * len(keys) // parts]
            gid = hashlib.sha1(json.dumps([scale, part]).encode()).hexdigest()[:12]
            groups.append({"id": gid, "scale": scale, "keys": part, "cells": [cells[k] for k in part]})
    return groups


def unique_series(figs: list) -> list:
    """(figure, series) of the first series of each cell key over the resolved figures, in order."""
    seen, out = set(), []
    for fig in figs:
        for s in fig["series"]:
            if s["key"] not in seen:
                seen.add(s["key"])
                out.append((fig, s))
    return out


def all_cells(figs: list) -> dict:
    """key -> cell over resolved figures (consistency-checked)."""
    cells = {}
    for fig in figs:
        for s in fig["series"]:
            cells.setdefault(s["key"], s["cell"])
    return cells


def with_defaults(config: dict) -> dict:
    cfg = copy.deepcopy(config)
    cfg.setdefault("scale", "default")
    cfg.setdefault("seeds_per_job", 50)
    cfg.setdefault("scales", {})
    return cfg
