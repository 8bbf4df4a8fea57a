# The resolved figure (resolved once, while the DAG is built) -> jobs that read it: run files -> the
# figure's table (long format, or the static/derived table) and plot spec; the table -> the
# figure's claims (JSON, reStructuredText for the HTML report) and its record (REPORT.md's section).


localrules:
    resolve_figure,
    publish,
    publish_figure,


# The registry entry Snakemake resolved for the DAG, written by a local job (a small script: no new
# Snakemake process, no command-line size limit).  The JSON is a parameter, so an edit of the entry
# (or of the scales, seeds_per_job, a --configfile) rewrites it and reruns the figure's aggregate,
# claims and figure jobs, and nothing else.
rule resolve_figure:
    output:
        paths.figure_file("{scale}", "{paper}-{fig}"),
    log:
        "results/{scale}/logs/resolve/{paper}-{fig}.log",
    conda:
        "../envs/pipeline.yaml"
    params:
        document=lambda w: figure_document(w.scale, fid_of(w)),
    script:
        "../scripts/resolve_figure.py"


rule aggregate:
    input:
        figure=paths.figure_file("{scale}", "{paper}-{fig}"),
        runs=simulation_runs,
        data=data_inputs,
    output:
        table="results/{scale}/tables/{paper}-{fig}.parquet",
        spec="results/{scale}/tables/{paper}-{fig}.json",
        archive=paths.staged_archive("{scale}", "{paper}-{fig}"),
    log:
        "results/{scale}/logs/aggregate/{paper}-{fig}.log",
    conda:
        "../envs/pipeline.yaml"
    resources:
        runtime=20,
        mem_mb=4000,
    params:
        logged=LOGGED,
        algorithms=ALGORITHMS_VERSION,
        data=data_option,
        archive=archive_option,
    shell:
        "OPENBLAS_NUM_THREADS=1 {params.logged} {log} python -m ensemble_bandits.cli aggregate --figure {input.figure} "
        "{params.data} {params.archive} --table {output.table} --spec {output.spec} --staged {output.archive}"


# Committed files (figures/<scale>/...) are written by no job but a checked copy: the aggregate,
# claims, report and figure jobs write under results/<scale>/ (paths.staged, paths.staged_archive),
# and rule publish (a figure's record, its archive: committed at paper scale, asked for by `all` and
# the paper targets only; a report) and rule publish_figure (its PDF and PNG, figures.smk) copy the
# result into place, so a job that fails (a typo, a damaged input) can never delete a committed file.
# Their outputs are flagged update(): Snakemake removes a job's outputs before it runs it, and after
# it fails, but not these (it backs them up and restores them), so a publish copy that fails or is
# interrupted leaves the committed file as it was (the copy itself is atomic: old or new, never
# half).  `--delete-all-output` is refused when it would reach figures/paper/ (common.smk).
rule publish:
    input:
        staged=lambda w: paths.staged_source(f"figures/{w.scale}/{w.path}"),
    output:
        update("figures/{scale}/{path}"),
    log:
        "results/{scale}/logs/publish/{path}.log",
    wildcard_constraints:
        path=PUBLISHED,
    conda:
        "../envs/pipeline.yaml"
    params:
        logged=LOGGED,
    shell:
        PUBLISH


rule claims:
    input:
        figure=paths.figure_file("{scale}", "{paper}-{fig}"),
        table="results/{scale}/tables/{paper}-{fig}.parquet",
        archive=paths.staged_archive("{scale}", "{paper}-{fig}"),
    output:
        json=paths.claims_file("{scale}", "{paper}-{fig}"),
        rst="results/{scale}/claims/{paper}-{fig}.rst",
        record=paths.staged(paths.record_file("{scale}", "{paper}-{fig}")),
    log:
        "results/{scale}/logs/claims/{paper}-{fig}.log",
    conda:
        "../envs/pipeline.yaml"
    resources:
        runtime=10,
    params:
        logged=LOGGED,
        redrawn=redrawn_option,
    shell:
        "{params.logged} {log} python -m ensemble_bandits.cli claims --figure {input.figure} --table {input.table} "
        "--json {output.json} --rst {output.rst} --record {output.record} --archive {input.archive} {params.redrawn}"
