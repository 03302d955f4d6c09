"""What the script of an LLM stage's rule takes from it: :class:`Stage`."""

from __future__ import annotations

from dataclasses import dataclass

from heart.common import provenance
from heart.common.atomic import sha256_file
from heart.llm import shards
from heart.llm.engine import Engine
from heart.llm.models import ModelSpec
from heart.llm.request import template


@dataclass
class Stage:
    """What the script of an LLM stage's rule (completions, judging, tagging) takes from it: the engine for
    its one model and that model's spec, its shard, and its prompt template with the versions that go into
    every request (``version``: the prompt's, ``+`` the resource's the prompt is filled from, e.g. the
    rubric) and, with the job's own (:func:`heart.common.provenance.collect`), into the table's ``provenance``."""

    engine: Engine
    spec: ModelSpec
    shard: str
    template: str
    version: str
    provenance: dict

    @classmethod
    def of(cls, smk, resource: str | None = None) -> "Stage":
        """From a script's ``snakemake`` object: params ``model``, ``llm``, ``shard``; inputs ``prompt`` and,
        when ``resource`` names one (``"rubric"``, ``"taxonomy"``), that input."""
        engine = Engine.of_job(smk, [smk.params.model])
        name, (_, n_shards) = smk.params.model["name"], shards.parse(smk.params.shard)
        spec = engine.specs[name] = engine.specs[name].share(n_shards)  # its shard's part of the model's limits
        text, version = template(smk.input.prompt)
        record = {**provenance.collect(smk), "prompt_version": version, "model": spec.model}
        if resource:
            record[f"{resource}_version"] = sha256_file(smk.input[resource])[:12]
            version = f"{version}+{record[f'{resource}_version']}"
        return cls(engine, spec, smk.params.shard, text, version, record)
