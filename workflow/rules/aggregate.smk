# Run files of a figure -> its table (long format, or the static/derived table) and plot spec;
# the table -> the figure's claims (JSON for REPORT.md, reStructuredText for the HTML report).


rule aggregate:
    input:
        runs=simulation_runs,
        data=data_inputs,
    output:
        table="results/{scale}/tables/{paper}-{fig}.parquet",
        spec="results/{scale}/tables/{paper}-{fig}.json",
    log:
        "results/{scale}/logs/aggregate/{paper}-{fig}.log",
    conda:
        "../envs/pipeline.yaml"
    resources:
        runtime=20,
        mem_mb=4000,
    params:
        logged=LOGGED,
        digest=lambda w: registry.entry_digest(entry(w)),
        algorithms=ALGORITHMS_VERSION,
        scales=scales_json(),
        per_job=config["seeds_per_job"],
        fid=fid_of,
        data=data_option,
    shell:
        "OPENBLAS_NUM_THREADS=1 {params.logged} {log} python -m ensemble_bandits.cli aggregate --id {params.fid} --scale {wildcards.scale} "
        "--seeds-per-job {params.per_job} --scales-json {params.scales} {params.data} "
        "--table {output.table} --spec {output.spec}"


rule claims:
    input:
        table="results/{scale}/tables/{paper}-{fig}.parquet",
    output:
        json="results/{scale}/claims/{paper}-{fig}.json",
        rst="results/{scale}/claims/{paper}-{fig}.rst",
    log:
        "results/{scale}/logs/claims/{paper}-{fig}.log",
    conda:
        "../envs/pipeline.yaml"
    resources:
        runtime=10,
    params:
        logged=LOGGED,
        claims=lambda w: json.dumps(entry(w).get("claims", []), sort_keys=True),
        scales=scales_json(),
        fid=fid_of,
    shell:
        "{params.logged} {log} python -m ensemble_bandits.cli claims --id {params.fid} --scale {wildcards.scale} "
        "--scales-json {params.scales} --table {input.table} --json {output.json} --rst {output.rst}"
