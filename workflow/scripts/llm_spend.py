"""rule llm_spend: what the answers in the response cache cost, per model and mode (heart/llm/spend.py)."""
from heart.common import provenance, tableio
from heart.common.runtime import logged
from heart.llm import load_litellm
from heart.llm.spend import spend

with logged(snakemake.log[0], snakemake) as log:
    litellm = load_litellm()

    litellm.suppress_debug_info = True
    table = spend(tableio.read_table(snakemake.input[0]), litellm)
    tableio.write_table(table, snakemake.output.table, "llm_spend", provenance.collect(snakemake))
    table.to_csv(snakemake.output.csv, index=False)
    log.info("LLM spend:\n%s", table.to_string(index=False))
