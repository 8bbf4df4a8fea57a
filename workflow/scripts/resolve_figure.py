"""Rule resolve_figure: write the figure Snakemake resolved while it built the job graph (the
rule's `document` parameter, JSON) to results/<scale>/figures/<id>.json, and a log line.

A `script:` job runs in a plain Python process (a fraction of a second); a `run:` block would
start a whole new Snakemake process per figure.  The document travels pickled, not on a command
line, so its size is not bounded by the kernel's limit on one argument."""
from ensemble_bandits import atomic

sm = snakemake  # noqa: F821 (injected by Snakemake)
atomic.write_text_atomic(sm.params.document, sm.output[0])
atomic.write_text_atomic(f"resolved {sm.wildcards.paper}-{sm.wildcards.fig} at scale {sm.wildcards.scale}\n", sm.log[0])
