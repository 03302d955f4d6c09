# heart — HEART benchmark workflow: raw ESConv -> items -> completions -> judgments
# -> statistics -> figures. Run `make run` (see README.md); every stage's rules are
# in workflow/rules/<stage>.smk, its outputs in results/<stage>/.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/items.smk"


rule all:
    input:
        "results/data/esconv_source.parquet",
        "results/items/screening_audit.parquet",
        "results/items/regular.parquet",
    default_target: True
