# Replication pipeline for four bandit-exploration papers (see README.md).
#   snakemake --cores 32 all                          every registered figure at config scale
#   snakemake --cores 2 figures/default/phe-fig1.pdf  one figure
#   snakemake --cores 2 phe                           one paper
#   snakemake --cores 2 --config scale=smoke all      another scale
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config/config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/simulate.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        targets(SCALE),
