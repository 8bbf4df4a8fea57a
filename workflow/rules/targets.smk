# Bare figure ids as targets: `snakemake --cores 2 phe-fig1` builds figures/<scale>/phe-fig1.pdf
# and .png at the configured scale (skipped ids too: a target named explicitly is built); a figure
# planned in looks also its record, which the next look reads (`--config look=k`, common.smk).
for _fid in ALL_IDS:

    rule:
        name:
            _fid
        input:
            figure_targets(SCALE, [_fid]) + look_record(SCALE, _fid),


# Any other bare word (no "/") that no rule makes, e.g. `snakemake phe-fig99`: an error listing
# what can be built, instead of Snakemake's "No rule to produce phe-fig99".
rule unknown_target:
    input:
        unknown_target_error,
    output:
        "{target}",
    wildcard_constraints:
        target=r"[^/]+",
