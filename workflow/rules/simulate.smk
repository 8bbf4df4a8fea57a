# One job = (cell, block of seeds).  A job saves its state every few minutes (--checkpoint; paths.checkpoint_file)
# and a rerun of a stopped job resumes from the round it had reached, with the same numbers.  The cell spec and the library's algorithm version are
# parameters, so Snakemake reruns a job when either changes (rerun trigger "params").
#
# Timing jobs (cells with `timing: unbatched`, e.g. the phe-runtime curves "..., one run at a time")
# measure wall time, so they run alone and repeat:
# * locally, such a job takes every core Snakemake was given (threads = --cores), so Snakemake starts
#   no other job beside it (the simulation itself stays single-threaded: *_NUM_THREADS=1 below);
# * other jobs run on one thread (*_NUM_THREADS = resources.cpus_per_task = 1), many side by side;
#   a torch agent's job takes config `torch_threads` (default 1; same numbers at any count:
#   tests/test_threads.py), for a figure with fewer long neural jobs than cores;
# * on SLURM (workflow/profiles/slurm) every job is its own allocation of cpus_per_task (1, or
#   torch_threads for a torch agent's job) and a timing job's threads do not change it: a timing
#   job asks for a whole node instead (resource slurm_extra: --exclusive), so no other job shares
#   its node.  Nodes may differ: to compare timing cells with
#   each other, pin them to one kind of node (--set-resources simulate:constraint=NAME), or build
#   the timing figure (phe-runtime) on one machine;
# * every seed runs cells.TIMING_REPEATS (5) times, each a full run, whose numbers must be
#   identical; the run file records the median as `seconds` and the spread (seconds_min,
#   seconds_max, seconds_repeats).  The repeats are part of the `algorithms` parameter of timing
#   jobs only, so changing them reruns those jobs and no other.


rule simulate:
    input:
        data=lambda w: cell_data_inputs(cell(w.scale, w.key), f"simulation of cell {w.key}"),
    output:
        paths.run_file("{scale}", "{key}", "{start}", "{end}"),
    log:
        paths.simulate_log("{scale}", "{key}", "{start}", "{end}"),
    conda:
        "../envs/pipeline.yaml"
    threads: simulate_threads
    resources:
        runtime=cost_minutes,
        mem_mb=2000,
        cpus_per_task=job_threads,
        gpu=lambda w: cells.gpu_request(cell(w.scale, w.key), config.get("gpu", 0)),
        slurm_extra=lambda w: "--exclusive" if timing_job(w) else None,
    params:
        logged=LOGGED,
        cell=lambda w: shlex.quote(json.dumps(cell(w.scale, w.key), sort_keys=True)),
        algorithms=algorithms_stamp,
        device=device_option,
        data=lambda w: cell_data_option(cell(w.scale, w.key)),
        checkpoint=lambda w: paths.checkpoint_file(w.scale, w.key, w.start, w.end),
    shell:
        "OMP_NUM_THREADS={resources.cpus_per_task} OPENBLAS_NUM_THREADS={resources.cpus_per_task} "
        "MKL_NUM_THREADS={resources.cpus_per_task} "
        "{params.logged} {log} python -m ensemble_bandits.cli simulate --cell {params.cell} "
        "--seeds {wildcards.start} {wildcards.end} {params.data} --out {output}{params.device} "
        "--checkpoint {params.checkpoint}"


# Shared-pass jobs: one rule per group of cells (registry.shared_groups, common.smk), whose outputs
# are the run files of all its cells for one seed block: one environment, every agent in lockstep
# (python -m ensemble_bandits.cli simulate-group).  The per-cell rule above could write the same
# files: the ruleorder prefers the group (same numbers either way; tests/test_shared_pass.py).
for _group in SHARED_GROUPS:

    rule:
        name:
            f"simulate_group_{_group['scale']}_{_group['id']}"
        input:
            data=lambda w, g=_group: cell_data_inputs(g["cells"][0], f"shared pass {g['id']}"),
        output:
            [paths.run_file(_group["scale"], key, "{start}", "{end}") for key in _group["keys"]],
        log:
            paths.simulate_log(_group["scale"], f"group-{_group['id']}", "{start}", "{end}"),
        conda:
            "../envs/pipeline.yaml"
        threads: 1
        resources:
            runtime=lambda w, g=_group: group_cost_minutes(g, w),
            mem_mb=2500,
            cpus_per_task=1,
        params:
            logged=LOGGED,
            cells=shlex.quote(json.dumps(_group["cells"], sort_keys=True)),
            algorithms=" | ".join(sorted({cells.algorithms_stamp(c) for c in _group["cells"]})),
            data=lambda w, g=_group: cell_data_option(g["cells"][0]),
        shell:
            "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 "
            "{params.logged} {log} python -m ensemble_bandits.cli simulate-group --cells {params.cells} "
            "--seeds {wildcards.start} {wildcards.end} {params.data} --out {output}"

    workflow.ruleorder(f"simulate_group_{_group['scale']}_{_group['id']}", "simulate")
