"""The reply grammar of the small-model strategy (issue 33) against the real llama.cpp server
with the 0.5B model (e2e; wire behaviour only): the pinned build takes the GBNF grammar in the
request's ``grammar`` field, refuses a broken one (so the field is read, not ignored), and
whatever the model writes under it parses, even when asked for prose. What it writes is not
asserted."""

from __future__ import annotations

import pytest

from codeloop.agent.small_model.reply_format import GRAMMAR, REPLY_FORMAT_PROMPT, parse_reply
from codeloop.llm.adapters.openai_compatible import OpenAICompatibleAdapter
from codeloop.llm.errors import ProviderError
from codeloop.llm.types import Message, Request

from .conftest import LocalLLM

pytestmark = pytest.mark.e2e


def _request(local_llm: LocalLLM, prompt: str, grammar: str, seed: int = 0, temperature: float = 0.0) -> Request:
    return Request(model=local_llm.model, temperature=temperature, max_tokens=160,
                   messages=[Message.system(REPLY_FORMAT_PROMPT), Message.user(prompt)],
                   provider_options={"llama_cpp": {"grammar": grammar, "seed": seed}})


async def test_the_server_takes_the_reply_grammar_and_every_reply_parses(local_llm: LocalLLM) -> None:
    adapter = OpenAICompatibleAdapter(local_llm.base_url, name="llama_cpp", timeout=local_llm.timeout)
    try:
        prompts = ["Create hello.py that prints Hello, world!", "In config.py change MAX_RETRIES = 3 to 5.",
                   "Which Python version is installed here?", "Say hello in French, in prose."]
        for prompt in prompts:
            response = await adapter.complete(_request(local_llm, prompt, GRAMMAR))
            parse_reply(response.text)  # raises ReplyFormatError (with the line) if it does not
        # Sampled candidates (temperature > 0, a seed each) are held by the grammar too.
        for seed in (1, 2):
            response = await adapter.complete(_request(local_llm, prompts[0], GRAMMAR, seed, temperature=0.8))
            parse_reply(response.text)
        with pytest.raises(ProviderError):
            await adapter.complete(_request(local_llm, prompts[0], "root ::= ( \"unclosed\""))
    finally:
        await adapter.close()
