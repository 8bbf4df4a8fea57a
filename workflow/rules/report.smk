# REPORT.md (every claim of every figure at one scale) and per-paper reports; paper targets.


report: "../report/workflow.rst"


# --report only: the texts of the report's pages (config is how Snakemake hands text to its
# templates; as job parameters they would be listed again under each figure), and Snakemake's
# warning per file made elsewhere ("Missing metadata", one per committed file: they buried the
# report's own lines) left out.
if REPORTING:
    config["_report"] = report_texts(SCALE)
    logger.addFilter(lambda record: not str(record.msg).startswith("Missing metadata for file"))


# The sections of reused ids (reuse_records) come from their existing records, which are not
# declared as inputs: as inputs, Snakemake would rebuild their figures, whose run files are gone.
# Each record names its run; REPORT.md says which sections come from which run.
rule report_all:
    input:
        records=lambda w: [paths.record_file(w.scale, i) for i in built_ids(w.scale)],
        figures=lambda w: figure_targets(w.scale, built_ids(w.scale)),
        registry=REGISTRY_FILES,  # the causes of the verdicts are read from it
        history="config/rule_history.yaml",  # revised rules: the first rule's verdicts (decided on the archives)
    output:
        paths.staged("figures/{scale}/REPORT.md"),
    log:
        "results/{scale}/logs/report.log",
    conda:
        "../envs/pipeline.yaml"
    params:
        logged=LOGGED,
        ids=" ".join(shlex.quote(i) for i in IDS),
        skipped=" ".join(shlex.quote(i) for i in SKIPPED),
        per_job=config["seeds_per_job"],  # a planned look's cost, in this run's jobs
    shell:
        "{params.logged} {log} python -m ensemble_bandits.cli report --scale {wildcards.scale} "
        "--ids {params.ids} --skipped {params.skipped} --out {output} --seeds-per-job {params.per_job}"


rule report_paper:
    input:
        registry=REGISTRY_FILES,
        history="config/rule_history.yaml",
        records=lambda w: [paths.record_file(w.scale, i) for i in built_ids(w.scale) if REGISTRY[i]["paper"] == w.paper],
        figures=lambda w: figure_targets(w.scale, [i for i in built_ids(w.scale) if REGISTRY[i]["paper"] == w.paper]),
    output:
        paths.staged("figures/{scale}/REPORT-{paper}.md"),
    log:
        "results/{scale}/logs/report-{paper}.log",
    conda:
        "../envs/pipeline.yaml"
    params:
        logged=LOGGED,
        ids=lambda w: " ".join(shlex.quote(i) for i in IDS if REGISTRY[i]["paper"] == w.paper),
        per_job=config["seeds_per_job"],
    shell:
        "{params.logged} {log} python -m ensemble_bandits.cli report --scale {wildcards.scale} "
        "--ids {params.ids} --out {output} --seeds-per-job {params.per_job}"


# The paper targets (`snakemake phe`): one rule per paper of ensemble_bandits.papers.
for _paper in PAPERS:

    rule:
        name:
            _paper
        input:
            lambda w, paper=_paper: targets(SCALE, paper),
