# One papermill notebook per plot kind, executed once per figure (a kernel that fails to start is
# started again: ensemble_bandits.plotting.execute); the executed copy is kept under
# results/<scale>/notebooks/ for inspection.


rule figure:
    input:
        table="results/{scale}/tables/{paper}-{fig}.parquet",
        spec="results/{scale}/tables/{paper}-{fig}.json",
        notebook=lambda w: f"notebooks/{entry(w)['kind']}.ipynb",
    output:
        pdf=paths.staged("figures/{scale}/{paper}-{fig}.pdf"),
        png=paths.staged("figures/{scale}/{paper}-{fig}.png"),
    log:
        notebook="results/{scale}/notebooks/{paper}-{fig}.ipynb",
        stderr="results/{scale}/logs/figure/{paper}-{fig}.log",
    conda:
        "../envs/pipeline.yaml"
    resources:
        runtime=10,
        mem_mb=2000,
    params:
        logged=LOGGED,
    shell:
        "MPLBACKEND=Agg {params.logged} {log.stderr} python -m ensemble_bandits.plotting.execute {input.notebook} "
        "{log.notebook} table={input.table} spec={input.spec} out_pdf={output.pdf} out_png={output.png}"


# The figure into place (see rule publish): the PDF, the PNG (with the caption of the HTML report)
# and, for a table, its markdown and LaTeX copies.  The plot does not read the claims (rule figure
# draws while they are decided); a figure is published once its claims are decided, so a figure
# target also decides them.
rule publish_figure:
    input:
        staged=[paths.staged("figures/{scale}/{paper}-{fig}.pdf"), paths.staged("figures/{scale}/{paper}-{fig}.png")],
        claims="results/{scale}/claims/{paper}-{fig}.rst",
        # the figure's datasets, checked here too: a missing or altered file stops the run before any
        # job even when the staged figure exists (Snakemake would otherwise take that file as it is)
        data=data_inputs,
    output:
        pdf=update("figures/{scale}/{paper}-{fig}.pdf"),
        png=report(
            update("figures/{scale}/{paper}-{fig}.png"),
            caption="../report/figure.rst",
            category="{paper}",
            subcategory="{scale}",
            labels={"figure": "{paper}-{fig}", "scale": "{scale}"},
        ),
    log:
        "results/{scale}/logs/publish/figure-{paper}-{fig}.log",
    conda:
        "../envs/pipeline.yaml"
    params:
        logged=LOGGED,
        caption=lambda w: rst_escape(entry(w)["caption"]),
        title=lambda w: rst_escape(entry(w)["title"]),
    shell:
        PUBLISH
