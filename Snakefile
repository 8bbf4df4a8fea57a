# Replication pipeline for four bandit-exploration papers (see README.md).
#   snakemake --cores 32 all                          every registered figure at config scale
#   snakemake --cores 2 figures/default/phe-fig1.pdf  one figure
#   snakemake --cores 2 phe                           one paper
#   snakemake --cores 2 all --config scale=smoke      another scale (targets before --config)
from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version, validate

from ensemble_bandits import registry, validation

min_version("9.0")


configfile: "config/config.yaml"


# Typos fail here, naming the cause: a key given twice in a config file (config/config.yaml and
# any --configfile) or after --config (e.g. --config scale=smoke scale=paper: Snakemake keeps the
# last), and a config key the schema does not know (e.g. --config scal=smoke).
try:
    validation.check_config_args(workflow.config_settings.config_args)
    validation.check_config(config, workflow.configfiles, "workflow/schemas/config.schema.yaml")
except registry.RegistryError as err:
    raise WorkflowError(str(err))
validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/text.smk"
include: "workflow/rules/simulate.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/targets.smk"


rule all:
    default_target: True
    input:
        lambda w: targets(SCALE),
