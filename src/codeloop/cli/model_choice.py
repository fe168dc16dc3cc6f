"""Which model ``codeloop run`` (and ``codeloop codali run``) uses, and its client.

Order: ``--model-file PATH.gguf`` when given (any local GGUF, served like the embedded model);
else ``--provider``/``--base-url`` when given; else the first API key set
(``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY``/``GOOGLE_API_KEY``); else the
local llama.cpp model (installed and started on first use, :func:`start_local_model`) with
the ``text`` profile. ``--gpu-layers N`` reaches the local server's ``--n-gpu-layers``.
:func:`build_client` makes the one adapter the choice needs.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

PROVIDER_KEYS = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}
"""Environment variables holding each provider's key, in lookup order."""
PROVIDER_PROFILE = {"openai": "openai", "anthropic": "anthropic", "gemini": "gemini", "openai_compatible": "text"}
"""Default profile for each provider."""
ADAPTERS = {"openai": ("openai", "OpenAIAdapter"), "anthropic": ("anthropic", "AnthropicAdapter"),
            "gemini": ("gemini", "GeminiAdapter")}
"""The adapter (module of ``codeloop.llm.adapters``, class) of each keyed provider, imported
on first use so a run loads only its own."""
LOCAL_MODEL = "1.5b"
"""Local model used without an API key (``0.5b`` is faster but rarely finishes a task)."""


class UsageError(Exception):
    """A one-line message for the user: what is wrong and how to fix it (exit 2)."""


@dataclass(frozen=True)
class ModelChoice:
    """Which provider, profile and model a run uses."""

    provider: str
    """``openai``, ``anthropic``, ``gemini`` or ``openai_compatible``."""
    profile: str
    model: str | None
    """Model id; None = the profile's default."""
    base_url: str | None
    api_key: str | None
    """The key found in the environment (never printed)."""
    local: bool = False
    """True when the local llama.cpp server must be started."""
    model_file: str | None = None
    """A GGUF file the local server serves instead of the embedded model (``--model-file``)."""
    gpu_layers: int | None = None
    """Layers the local server offloads to a GPU (``--gpu-layers``; None: llama.cpp's default)."""


def choose_model(
    provider: str | None, profile: str | None, model: str | None, base_url: str | None, environ: dict[str, str],
    model_file: str | None = None, gpu_layers: int | None = None,
) -> ModelChoice:
    """Resolve the options and environment into a :class:`ModelChoice`; raises UsageError.
    ``gpu_layers`` is kept for a local choice only (it means nothing to a remote server)."""
    from codeloop.profiles import PROFILE_IDS

    if profile is not None and profile not in PROFILE_IDS:
        raise UsageError(f"unknown --profile {profile!r}: use one of {', '.join(PROFILE_IDS)}")
    if gpu_layers is not None and gpu_layers < 0:
        raise UsageError(f"--gpu-layers must be 0 or more, not {gpu_layers}")
    if model_file is not None:
        # The user named a file to serve: no key or remote server is asked, whatever is set.
        if base_url or provider not in (None, "openai_compatible"):
            raise UsageError("--model-file serves a local GGUF with llama-server: leave out --provider and "
                             "--base-url (or base_url in the config files)")
        return ModelChoice("openai_compatible", profile or PROVIDER_PROFILE["openai_compatible"], model, None,
                           None, True, model_file, gpu_layers)
    local = False
    if provider is None:
        if base_url:
            provider = "openai_compatible"
        else:
            provider = next((p for p, keys in PROVIDER_KEYS.items() if any(environ.get(k) for k in keys)), None)
            if provider is None:
                provider, local = "openai_compatible", True
    if provider not in PROVIDER_PROFILE:
        raise UsageError(f"unknown --provider {provider!r}: use one of {', '.join(PROVIDER_PROFILE)}")
    keys = PROVIDER_KEYS.get(provider, ("OPENAI_API_KEY",))
    api_key = next((environ[k] for k in keys if environ.get(k)), None)
    if provider in PROVIDER_KEYS and not api_key:
        raise UsageError(f"no API key for provider {provider!r}: set {' or '.join(keys)} in the environment")
    env_url = environ.get(f"{provider.upper()}_BASE_URL") if provider in PROVIDER_KEYS else None
    return ModelChoice(provider, profile or PROVIDER_PROFILE[provider], model, base_url or env_url, api_key, local,
                       gpu_layers=gpu_layers if local else None)


def served_model(choice: ModelChoice) -> Any:
    """The ``llama_server.ServedModel`` of a local choice: its ``--model-file``, else the
    embedded ``choice.model`` (default :data:`LOCAL_MODEL`); raises LocalModelError."""
    from codeloop.llm import llama_server

    if choice.model_file is not None:
        return llama_server.model_file(choice.model_file, choice.gpu_layers)
    return llama_server.embedded_model(choice.model or LOCAL_MODEL, choice.gpu_layers)


def start_local_model(choice: ModelChoice) -> ModelChoice:
    """``choice`` pointed at its local llama.cpp server (:func:`served_model`), installed and
    started as needed; raises LocalModelError."""
    from codeloop.llm.llama_server import serving

    served = served_model(choice)
    state = serving(served)
    # The served model's id (e.g. qwen2.5-coder-1.5b-instruct), not the size alias, is what
    # the status line, the session log and the context-window lookup should see.
    return ModelChoice(choice.provider, choice.profile, served.model_id, state.base_url, None, True,
                       choice.model_file, choice.gpu_layers)


class LocalModelClient:
    """The embedded model's client (issue 23): when its llama-server died (killed, OOM), the
    next model call starts it again on the same port, once per run, saying so, instead of
    failing the session. Everything else is the wrapped client's."""

    def __init__(self, client: Any, model: Any, base_url: str, say: Any) -> None:
        # model: the llama_server.ServedModel the server serves (restarted as it was started).
        self.client, self.model, self.say = client, model, say
        self.port = int(base_url.rsplit(":", 1)[1].split("/", 1)[0])
        self.restarted = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    async def _restart(self) -> bool:
        """True when the server was dead and has been started again."""
        import asyncio

        from codeloop.llm import llama_server

        if self.restarted or await asyncio.to_thread(llama_server.running, self.model.key) is not None:
            return False
        self.restarted = True
        self.say(f"the local model server (127.0.0.1:{self.port}) stopped; restarting it")
        await asyncio.to_thread(llama_server.stop, self.model.key)  # clears the stale record
        await asyncio.to_thread(llama_server.start, self.model, self.port, self.say)
        return True

    async def complete(self, request: Any) -> Any:
        from codeloop.llm.errors import NetworkError

        try:
            return await self.client.complete(request)
        except NetworkError:
            if not await self._restart():
                raise
        return await self.client.complete(request)

    async def stream(self, request: Any) -> Any:
        from codeloop.llm.errors import NetworkError

        try:
            async for event in self.client.stream(request):
                yield event
            return
        except NetworkError:  # refused: nothing of this call arrived
            if not await self._restart():
                raise
        async for event in self.client.stream(request):
            yield event


def fix_hints(choice: ModelChoice) -> dict[str, str]:
    """What to change when the provider refuses the key or does not know the model,
    naming the variable, flag or setting (by error type of the ``error`` event)."""
    keys = " or ".join(PROVIDER_KEYS.get(choice.provider, ("OPENAI_API_KEY",)))
    where = "--base-url (or base_url in .codeloop/config.toml)"
    return {
        "AuthenticationError": f"set a valid key in {keys}" + (f", or check {where}" if choice.base_url else ""),
        "NotFoundError": ("pass a model this provider serves with --model ID (or set model in "
                          f".codeloop/config.toml or ~/.config/codeloop/config.toml); check {where}"),
    }


def build_client(choice: ModelChoice) -> Any:
    """A Client holding the one adapter the choice needs."""
    from codeloop.llm.client import Client

    adapter: Any
    if choice.provider in ADAPTERS:
        module, name = ADAPTERS[choice.provider]
        adapter_class = getattr(importlib.import_module(f"codeloop.llm.adapters.{module}"), name)
        adapter = adapter_class(api_key=choice.api_key, base_url=choice.base_url)
    else:
        from codeloop.llm.adapters.base import AdapterTimeout
        from codeloop.llm.adapters.openai_compatible import OpenAICompatibleAdapter

        # Local models on a CPU can read a long prompt for minutes before the first token.
        timeout = AdapterTimeout(connect=10.0, request=900.0, stream_read=600.0) if choice.local else None
        # Our llama-server runs with the prompt cache off (identical outputs run to run, for
        # benchmarks). An agent's history only grows, and re-reading all of it at ~50 tokens/s
        # on 2 cores costs minutes per step, so the embedded default asks for the cache.
        extra = {"cache_prompt": True} if choice.local else None
        adapter = OpenAICompatibleAdapter(choice.base_url or "http://127.0.0.1:8080/v1", api_key=choice.api_key,
                                          timeout=timeout, extra_body=extra)
    return Client({choice.provider: adapter})
