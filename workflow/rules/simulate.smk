# One job = (cell, block of seeds).  The cell spec and the library's algorithm version are
# parameters, so Snakemake reruns a job when either changes (rerun trigger "params").


def _cost_minutes(w):
    c = cell(w.scale, w.key)
    if "experiment" in c:
        T, work = c["experiment"].get("horizon", 1000), 1.0
    else:
        T = c["horizon"]
        env = c["env"]
        work = env.get("d", 10) ** 2 + env.get("d", 10) * env.get("n_arms", 100)
        members = c["agent"].get("m", c["agent"].get("M", 1))
        members = T if members in ("T", "horizon") else members
        work += members * env.get("d", 10)
    seeds = int(w.end) - int(w.start)
    return max(10, int(3 * seeds * T * (20 + work / 50) * 1e-6 / 60) + 10)


rule simulate:
    output:
        "results/{scale}/runs/{key}/seeds-{start}-{end}.parquet",
    params:
        cell=lambda w: shlex.quote(json.dumps(cell(w.scale, w.key), sort_keys=True)),
        algorithms=ALGORITHMS_VERSION,
    log:
        "results/{scale}/logs/simulate/{key}-{start}-{end}.log",
    threads: 1
    resources:
        runtime=_cost_minutes,
        mem_mb=2000,
        cpus_per_task=1,
    shell:
        "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 "
        "python -m ensemble_bandits.cli simulate --cell {params.cell} "
        "--seeds {wildcards.start} {wildcards.end} --out {output} 2> {log}"
