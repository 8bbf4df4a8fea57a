# One job = (cell, block of seeds).  The cell spec and the library's algorithm version are
# parameters, so Snakemake reruns a job when either changes (rerun trigger "params").


rule simulate:
    output:
        paths.run_file("{scale}", "{key}", "{start}", "{end}"),
    log:
        paths.simulate_log("{scale}", "{key}", "{start}", "{end}"),
    conda:
        "../envs/pipeline.yaml"
    threads: 1
    resources:
        runtime=cost_minutes,
        mem_mb=2000,
        cpus_per_task=1,
        gpu=lambda w: validation.gpu_request(cell(w.scale, w.key), config.get("gpu", 0)),
    params:
        logged=LOGGED,
        cell=lambda w: shlex.quote(json.dumps(cell(w.scale, w.key), sort_keys=True)),
        algorithms=ALGORITHMS_VERSION,
    shell:
        "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 "
        "{params.logged} {log} python -m ensemble_bandits.cli simulate --cell {params.cell} "
        "--seeds {wildcards.start} {wildcards.end} --out {output}"
