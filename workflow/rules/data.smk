# Datasets (only with --config data_fetch=true; otherwise figures read data_dir as it is, after
# checking it while the DAG is built): download what data_dir lacks, check every file's SHA-256,
# and record the checked files.  Only the figures' required datasets (registry `data:`); optional
# ones (`optional_data:`, e.g. Covertype) are downloaded only by `python -m ensemble_bandits.cli
# data fetch NAME`, so that a failed download never stops a run.


rule fetch_data:
    output:
        "results/data/{dataset}.sha256",
    log:
        "results/logs/data/{dataset}.log",
    conda:
        "../envs/pipeline.yaml"
    resources:
        runtime=30,
    params:
        logged=LOGGED,
        data_dir=lambda w: shlex.quote(data_root()),
    shell:
        "{params.logged} {log} python -m ensemble_bandits.cli data fetch {wildcards.dataset} --data-dir {params.data_dir} "
        "> {output}"
