# Datasets (only with --config data_fetch=true; otherwise figures read data_dir as it is, after
# checking it while the DAG is built): download what data_dir lacks, check every file's SHA-256,
# and record the checked files.


rule fetch_data:
    output:
        "results/data/{dataset}.sha256",
    params:
        data_dir=lambda w: shlex.quote(data_root()),
    log:
        "results/logs/data/{dataset}.log",
    resources:
        runtime=30,
    conda:
        "../envs/pipeline.yaml"
    shell:
        "python -m ensemble_bandits.cli data fetch {wildcards.dataset} --data-dir {params.data_dir} "
        "> {output} 2> {log}"
