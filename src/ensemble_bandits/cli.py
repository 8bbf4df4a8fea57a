"""Command line used by the workflow rules: simulate, aggregate, claims, report.

    python -m ensemble_bandits.cli simulate --cell '<json>' --seeds 0 50 --out results/.../seeds-0-50.npz
    python -m ensemble_bandits.cli aggregate --id phe-fig1 --scale default --table T.parquet --spec T.json
    python -m ensemble_bandits.cli claims --id phe-fig1 --scale default --table T.parquet --json C.json --rst C.rst
    python -m ensemble_bandits.cli report --scale default --out figures/default/REPORT.md [--ids ...]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from . import pipeline


def _load(args):
    config = pipeline.with_defaults(pipeline.load_yaml(args.configfile))
    if getattr(args, "scales_json", None):
        config["scales"] = json.loads(args.scales_json)
    registry = pipeline.load_registry(args.config_dir, args.schema)
    return config, registry


def _figure(args):
    config, registry = _load(args)
    if args.id not in registry:
        raise SystemExit(f"unknown figure id {args.id!r}; known ids: {', '.join(sorted(registry))}")
    entry = registry[args.id]
    return config, entry, pipeline.resolve(entry, args.scale, config["scales"])


def cmd_simulate(args):
    """One job: the cell for a block of seeds, written as an .npz run file (imports numpy only)."""
    from .runner import simulate_columns
    from .tables import write_columns_atomic
    from .report import write_text_atomic

    cell = json.loads(args.cell)
    seeds = list(range(args.seeds[0], args.seeds[1]))
    t0 = time.perf_counter()
    print(f"simulate {os.path.basename(os.path.dirname(args.out))}: seeds {seeds[0]}..{seeds[-1]}, "
          f"T={cell.get('horizon', cell.get('experiment', {}).get('horizon'))}", file=sys.stderr, flush=True)
    cols = simulate_columns(cell, seeds, verbose=True)
    write_columns_atomic(cols, args.out)
    write_text_atomic(json.dumps(cell, indent=1, sort_keys=True), os.path.join(os.path.dirname(args.out), "cell.json"))
    print(f"done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)


def figure_spec(fig: dict) -> dict:
    entry = fig["entry"]
    plotted = [c for c in fig["curves"]
               if not any(s["curve"] == c and "experiment" in s["cell"] for s in fig["series"])]
    return {"id": fig["id"], "title": entry.get("title", fig["id"]), "caption": entry.get("caption", ""),
            "kind": entry["kind"], "band": entry.get("band", "se"), "panels": fig["panels"], "curves": plotted,
            "scale": fig["scale"], "plot": entry.get("plot", {}), "seeds": fig["seeds"], "horizon": fig["horizon"]}


def build_table(fig: dict, seeds_per_job: int, data_dir: str | None = None):
    import pandas as pd

    from .tables import DERIVED, figure_table

    entry = fig["entry"]
    if "static" in entry:
        from .static_tables import STATIC_TABLES

        st = entry["static"]
        if st["name"] not in STATIC_TABLES:
            raise SystemExit(f"unknown static table {st['name']!r}; known: {', '.join(sorted(STATIC_TABLES))}")
        params = dict(st.get("params", {}))
        if entry.get("data"):
            if not data_dir:
                raise SystemExit(f"{fig['id']} reads datasets {entry['data']}: give --data-dir or set data_dir")
            params["data_dir"] = data_dir
        return STATIC_TABLES[st["name"]](**params)
    if not fig["series"]:
        return pd.DataFrame({"id": [fig["id"]]})
    table = figure_table(fig, seeds_per_job)
    if "derive" in entry:
        d = entry["derive"]
        table = DERIVED[d["name"]](table, **d.get("params", {}))
    return table


def cmd_aggregate(args):
    from .tables import write_atomic

    config, entry, fig = _figure(args)
    table = build_table(fig, args.seeds_per_job or config["seeds_per_job"], args.data_dir or config.get("data_dir"))
    write_atomic(table, args.table)
    from .report import write_text_atomic
    write_text_atomic(json.dumps(figure_spec(fig), indent=1, default=str), args.spec)


def cmd_claims(args):
    import pandas as pd

    from .claims import evaluate, validate_names
    from .report import dump_claims

    config, entry, _ = _figure(args)
    paper = pipeline.resolve(entry, "paper", config["scales"])
    validate_names(entry, paper["curves"], paper["panels"])
    results = evaluate(entry, pd.read_parquet(args.table), args.scale)
    dump_claims(entry["id"], results, args.json, args.rst)
    for r in results:
        print(f"{r['id']}: {r['status']}", file=sys.stderr)


def cmd_report(args):
    from .report import report_markdown, write_text_atomic

    config, registry = _load(args)
    ids = args.ids or list(registry)
    figures = []
    for fid in ids:
        entry = registry[fid]
        fig = pipeline.resolve(entry, args.scale, config["scales"])
        with open(f"results/{args.scale}/claims/{fid}.json") as fh:
            claims = json.load(fh)["claims"]
        simulated = bool(fig["series"])
        figures.append({"id": fid, "paper": entry["paper"], "title": entry.get("title", fid),
                        "seeds": fig["seeds"] if simulated else None, "horizon": fig["horizon"],
                        "choices": entry.get("choices", ""), "claims": claims, "png": f"{fid}.png"})
    write_text_atomic(report_markdown(args.scale, figures, skipped=args.skipped or []), args.out)


def cmd_timings(args):
    """CPU seconds of the simulate jobs of each figure, read from their logs ("done in ... s")."""
    import re

    config, registry = _load(args)
    per_job = args.seeds_per_job or config["seeds_per_job"]
    print(f"{'figure':16s} {'cells':>6s} {'jobs':>6s} {'logged':>7s} {'CPU s':>9s}")
    grand = 0.0
    for fid in args.ids or sorted(registry):
        fig = pipeline.resolve(registry[fid], args.scale, config["scales"])
        runs = pipeline.figure_runs(fig, per_job)
        secs, found = 0.0, 0
        for f in runs:
            m = re.search(r"runs/(\w+)/seeds-(\d+)-(\d+)", f)
            log = f"results/{args.scale}/logs/simulate/{m.group(1)}-{m.group(2)}-{m.group(3)}.log"
            if os.path.exists(log):
                hit = re.search(r"done in ([0-9.]+) s", open(log).read())
                if hit:
                    secs += float(hit.group(1))
                    found += 1
        grand += secs
        print(f"{fid:16s} {len({s['key'] for s in fig['series']}):6d} {len(runs):6d} {found:7d} {secs:9.1f}")
    print(f"{'total':16s} {'':6s} {'':6s} {'':7s} {grand:9.1f}  (cells shared by figures count in each)")


def cmd_data(args):
    """Check the datasets in a data directory, or download them there."""
    from .data import DATASETS, DataError, fetch, verify

    names = args.names or sorted(DATASETS)
    data_dir = args.data_dir or pipeline.with_defaults(pipeline.load_yaml(args.configfile)).get("data_dir")
    failed = []
    for name in names:
        try:
            if args.action == "fetch":
                fetch([name], data_dir, log=lambda msg: print(msg, file=sys.stderr))
            for path in verify([name], data_dir):
                print(f"OK    {name}: {path}")
        except DataError as err:
            failed.append(name)
            print(f"FAIL  {name}: {err}")
    if failed:
        raise SystemExit(f"{len(failed)} of {len(names)} dataset(s) not usable: {', '.join(failed)}")


def main(argv=None):
    p = argparse.ArgumentParser(prog="ensemble_bandits.cli", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp):
        sp.add_argument("--configfile", default="config/config.yaml")
        sp.add_argument("--config-dir", default="config")
        sp.add_argument("--schema", default="workflow/schemas/registry.schema.yaml")
        sp.add_argument("--scales-json", default=None, help="per-scale caps (overrides config)")
        sp.add_argument("--scale", required=True)

    s = sub.add_parser("simulate")
    s.add_argument("--cell", required=True, help="cell spec as JSON")
    s.add_argument("--seeds", type=int, nargs=2, required=True, metavar=("START", "END"))
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_simulate)

    a = sub.add_parser("aggregate")
    common(a)
    a.add_argument("--id", required=True)
    a.add_argument("--seeds-per-job", type=int, default=None)
    a.add_argument("--data-dir", default=None, help="datasets directory (default: data_dir of the config)")
    a.add_argument("--table", required=True)
    a.add_argument("--spec", required=True)
    a.set_defaults(fn=cmd_aggregate)

    c = sub.add_parser("claims")
    common(c)
    c.add_argument("--id", required=True)
    c.add_argument("--table", required=True)
    c.add_argument("--json", required=True)
    c.add_argument("--rst", required=True)
    c.set_defaults(fn=cmd_claims)

    r = sub.add_parser("report")
    common(r)
    r.add_argument("--ids", nargs="*", default=None)
    r.add_argument("--skipped", nargs="*", default=None, help="ids left out of this run (listed as such)")
    r.add_argument("--out", required=True)
    r.set_defaults(fn=cmd_report)

    tm = sub.add_parser("timings", help="CPU time of each figure's simulate jobs, from their logs")
    common(tm)
    tm.add_argument("--ids", nargs="*", default=None)
    tm.add_argument("--seeds-per-job", type=int, default=None)
    tm.set_defaults(fn=cmd_timings)

    dt = sub.add_parser("data", help="check the datasets in a data directory (SHA-256), or download them")
    dt.add_argument("action", choices=["check", "fetch"])
    dt.add_argument("names", nargs="*", help="datasets (default: all)")
    dt.add_argument("--data-dir", default=None, help="default: data_dir of the config")
    dt.add_argument("--configfile", default="config/config.yaml")
    dt.set_defaults(fn=cmd_data)

    args = p.parse_args(argv)
    args.fn(args)


if __name__ == "__main__":
    main()
