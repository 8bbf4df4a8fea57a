# One papermill notebook per plot kind, executed once per figure; the executed copy is kept
# under results/<scale>/notebooks/ for inspection.


rule figure:
    input:
        table="results/{scale}/tables/{paper}-{fig}.parquet",
        spec="results/{scale}/tables/{paper}-{fig}.json",
        claims="results/{scale}/claims/{paper}-{fig}.rst",
        notebook=lambda w: f"notebooks/{entry(w)['kind']}.ipynb",
    output:
        pdf="figures/{scale}/{paper}-{fig}.pdf",
        png=report(
            "figures/{scale}/{paper}-{fig}.png",
            caption="../report/figure.rst",
            category="{paper}",
            subcategory="{scale}",
            labels={"figure": "{paper}-{fig}", "scale": "{scale}"},
        ),
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
        caption=lambda w: rst_escape(entry(w)["caption"]),
        title=lambda w: rst_escape(entry(w)["title"]),
    shell:
        "MPLBACKEND=Agg {params.logged} {log.stderr} papermill {input.notebook} {log.notebook} -k python3 --log-level WARNING "
        "--no-progress-bar -p table {input.table} -p spec {input.spec} -p out_pdf {output.pdf} "
        "-p out_png {output.png}"
