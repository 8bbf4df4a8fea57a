"""Checks of the configuration and of resolved figures, made before any job runs: config keys and
duplicate keys (typos; also a key given twice after ``--config``), each cell's agent, environment,
distributions and hyper-parameter names, the datasets a figure names, the panels a curve is
restricted to, the curves its claims name, and GPU requests.

Kept apart from :mod:`registry` (pure YAML -> figures -> cells -> jobs), because these checks need
the library's classes and the claim checks.
"""
from __future__ import annotations

from .registry import RegistryError, load_yaml, resolve


def check_config(config: dict, files=(), schema_path="workflow/schemas/config.schema.yaml") -> None:
    """Typos in the configuration, caught before Snakemake's schema validation: each config file
    in ``files`` parsed strictly (a key given twice is an error, see :func:`load_yaml`), and every
    top-level key of ``config`` (files and ``--config`` together) one the schema knows, so that
    ``--config scal=smoke`` fails instead of silently running the configured scale."""
    import difflib

    for path in dict.fromkeys(str(f) for f in files):
        load_yaml(path)
    known = sorted(load_yaml(schema_path).get("properties", {}))
    unknown = sorted(str(k) for k in config if k not in known)
    if unknown:
        close = {k: difflib.get_close_matches(k, known, n=1) for k in unknown}
        hints = [f"{m[0]!r}" if len(unknown) == 1 else f"{m[0]!r} for {k!r}" for k, m in close.items() if m]
        hint = f" (did you mean {', '.join(hints)}?)" if hints else ""
        raise RegistryError(f"unknown config key(s) {unknown}{hint}; known keys: {', '.join(known)}")


def check_config_args(entries) -> None:
    """The ``--config`` entries as typed (``key=value`` words): a key given twice is an error naming it
    and both values (Snakemake keeps the last one without a word, so ``--config scale=smoke
    scale=paper`` would silently plan a paper-scale run)."""
    if not isinstance(entries, (list, tuple)):
        return
    seen = {}
    for word in entries:
        key, sep, value = str(word).partition("=")
        if not sep:
            continue
        if key in seen:
            raise RegistryError(f"config key {key!r} given twice after --config ({key}={seen[key]} and "
                                f"{key}={value}); give it once (Snakemake would keep the last without a word)")
        seen[key] = value


def check_figure(entry: dict, fig: dict, defaults: dict) -> None:
    """Names in a resolved figure, checked before any job runs: each cell's agent, environment,
    distributions and hyper-parameter keys, the panels a curve is restricted to, and the curves and
    panels its claims name (at paper scale).  Raises RegistryError naming the figure, the curve and
    the cause."""
    from .cells import cell_datasets, check_cell
    from .data import DataError, check_names

    from .plot_options import allowed_options, unknown_options

    unknown = unknown_options(entry["kind"], entry.get("plot", {}))
    if unknown:
        allowed = allowed_options(entry["kind"])
        raise RegistryError(f"figure {fig['id']!r}: plot option(s) {unknown} are not read by plot kind "
                            f"{entry['kind']!r}; its options: {', '.join(allowed)}")
    if "static" in entry:
        from .paper_tables import STATIC_TABLES

        if entry["static"]["name"] not in STATIC_TABLES:
            raise RegistryError(f"figure {fig['id']!r}: unknown static table {entry['static']['name']!r}; known: "
                                f"{', '.join(sorted(STATIC_TABLES))}")
    try:
        check_names(entry.get("data", []) + entry.get("optional_data", []))
    except DataError as err:
        raise RegistryError(f"figure {fig['id']!r}: {err}") from None
    both = sorted(set(entry.get("data", [])) & set(entry.get("optional_data", [])))
    if both:
        raise RegistryError(f"figure {fig['id']!r}: dataset(s) {', '.join(both)} listed under both data "
                            f"(required) and optional_data")
    listed = set(entry.get("data", []) + entry.get("optional_data", []))
    for s in fig["series"]:
        try:
            check_cell(s["cell"])
        except ValueError as err:
            raise RegistryError(f"figure {fig['id']!r}, panel {s['panel']!r}, curve {s['curve']!r}: {err}") from None
        unlisted = [n for n in cell_datasets(s["cell"]) if n not in listed]
        if unlisted:
            raise RegistryError(f"figure {fig['id']!r}, panel {s['panel']!r}: its environment reads dataset(s) "
                                f"{', '.join(unlisted)}; list them under data: (or optional_data:) of the entry")
    paper = None
    restricted = [c for c in entry.get("curves", []) if c.get("panels")]
    if restricted:
        # a curve shown on some panels only (``panels:``) names panels the figure has, at this
        # scale or at paper scale (a scale override may drop panels): a typo would drop the curve
        paper = resolve(entry, "paper", defaults)
        known = set(fig["panels"]) | set(paper["panels"])
        for c in restricted:
            unknown = [p for p in c["panels"] if p not in known and "{" not in str(p)]
            if unknown:
                raise RegistryError(f"figure {fig['id']!r}, curve {c.get('label')!r} is restricted to panel(s) "
                                    f"{unknown} that the figure does not have; panels: {paper['panels']}")
    from .plans import check_looks

    check_looks(fig["id"], entry)
    if entry.get("claims"):
        from .claims import validate_names

        paper = paper or resolve(entry, "paper", defaults)
        try:
            validate_names(entry, paper["curves"] + list(paper.get("pending_curves", {})), paper["panels"])
        except ValueError as err:
            raise RegistryError(str(err)) from None


def without_absent(entry: dict, fig: dict, data_dir) -> dict:
    """The resolved figure ``fig`` of registry ``entry`` without the cells that read an optional
    dataset (``optional_data:``) absent from ``data_dir``: as the workflow builds it ("data absent")."""
    from .cells import cell_datasets
    from .data import present
    from .registry import without_datasets

    absent = [n for n in entry.get("optional_data", []) if not present(n, data_dir)]
    return without_datasets(fig, absent, cell_datasets) if absent else fig
