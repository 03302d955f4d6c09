"""The LLM tests' fixtures."""

import pytest


@pytest.fixture
def server(fake_llm):
    """The fault-injecting fake provider (tests/support/llm_server.py): retry-after 0.2 s, a hang of 5 s."""
    state, base = fake_llm
    state.retry_after, state.hang = 0.2, 5.0
    return state, base
