"""The core client: provider routing and middleware (unified-llm spec §2.2–2.6, §4.1–4.2).

``Client.complete()`` and ``Client.stream()`` route a :class:`Request` to the adapter named
by ``request.provider`` (else ``default_provider``; neither → ConfigurationError; the
client never guesses) through the middleware chain. They never retry (§6.6).

Middleware (§2.3) runs in onion order: the first registered sees the request first and
the response last. A middleware is either a plain async function
``async (request, call_next) -> Response`` (wraps ``complete`` only), or an object with
either or both of

- ``async complete(request, call_next) -> Response``
- ``stream(request, call_next) -> AsyncIterator[StreamEvent]`` (an async generator that
  iterates ``call_next(request)`` and yields events, possibly transformed)

The client holds no mutable per-request state; concurrent calls are safe (§2.6).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeAlias, TypeVar

from codeloop.llm.adapters.base import ProviderAdapter
from codeloop.llm.errors import ConfigurationError
from codeloop.llm.types import Request, Response, StreamEvent

CompleteNext = Callable[[Request], Awaitable[Response]]
StreamNext = Callable[[Request], AsyncIterator[StreamEvent]]
MiddlewareFunction = Callable[[Request, CompleteNext], Awaitable[Response]]
# A function, or an object with ``complete`` and/or ``stream`` (module docstring): duck-typed.
Middleware: TypeAlias = MiddlewareFunction | Any
_Next = TypeVar("_Next")
_Out = TypeVar("_Out")


class Client:
    """Routes requests to provider adapters through middleware (§2)."""

    def __init__(
        self,
        providers: Mapping[str, ProviderAdapter] | None = None,
        default_provider: str | None = None,
        middleware: Sequence[Middleware] = (),
    ) -> None:
        self.providers: dict[str, ProviderAdapter] = dict(providers or {})
        """Registered adapters by provider id."""
        if default_provider is not None and default_provider not in self.providers:
            raise ConfigurationError(
                f"default provider {default_provider!r} is not registered "
                f"(registered: {', '.join(self.providers) or 'none'})"
            )
        self.default_provider = default_provider or next(iter(self.providers), None)
        """Provider used when a request names none; the first registered when not given."""
        self.middleware: tuple[Middleware, ...] = tuple(middleware)
        self._initialized: set[int] = set()
        self._complete_chain = self._build_complete_chain()
        self._stream_chain = self._build_stream_chain()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **adapter_options: Any) -> Client:
        """A client with an adapter for each provider whose key is set (§2.2).

        Reads ``OPENAI_API_KEY`` (+ ``OPENAI_BASE_URL``, ``OPENAI_ORG_ID``,
        ``OPENAI_PROJECT_ID``), ``ANTHROPIC_API_KEY`` (+ ``ANTHROPIC_BASE_URL``) and
        ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY`` (+ ``GEMINI_BASE_URL``), in that order; the
        first registered becomes the default. With no key set the client is empty and every
        call raises ConfigurationError naming the variables to set.
        """
        env = os.environ if env is None else env
        providers: dict[str, ProviderAdapter] = {}
        if env.get("OPENAI_API_KEY"):
            from codeloop.llm.adapters.openai import OpenAIAdapter

            providers["openai"] = OpenAIAdapter(
                api_key=env["OPENAI_API_KEY"],
                base_url=env.get("OPENAI_BASE_URL") or None,
                organization=env.get("OPENAI_ORG_ID") or None,
                **_with_project_header(adapter_options, env.get("OPENAI_PROJECT_ID")),
            )
        if env.get("ANTHROPIC_API_KEY"):
            from codeloop.llm.adapters.anthropic import AnthropicAdapter

            providers["anthropic"] = AnthropicAdapter(
                api_key=env["ANTHROPIC_API_KEY"], base_url=env.get("ANTHROPIC_BASE_URL") or None,
                **adapter_options,
            )
        gemini_key = env.get("GEMINI_API_KEY") or env.get("GOOGLE_API_KEY")
        if gemini_key:
            from codeloop.llm.adapters.gemini import GeminiAdapter

            providers["gemini"] = GeminiAdapter(
                api_key=gemini_key, base_url=env.get("GEMINI_BASE_URL") or None, **adapter_options
            )
        return cls(providers)

    def register(self, name: str, adapter: ProviderAdapter) -> None:
        """Add (or replace) the adapter for ``name``; it becomes the default if there was none."""
        self.providers[name] = adapter
        if self.default_provider is None:
            self.default_provider = name

    def adapter_for(self, request: Request) -> ProviderAdapter:
        """The adapter ``request`` routes to, or ConfigurationError saying why there is none."""
        name = request.provider or self.default_provider
        if name is None:
            raise ConfigurationError(
                "no LLM provider configured: set OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY, "
                "register an adapter with Client(providers={...}), or run `scripts/local-llm serve` "
                "for a local model"
            )
        adapter = self.providers.get(name)
        if adapter is None:
            raise ConfigurationError(
                f"provider {name!r} is not registered (registered: {', '.join(self.providers) or 'none'})"
            )
        return adapter

    async def _ready(self, request: Request) -> ProviderAdapter:
        """The routed adapter, its optional ``initialize()`` awaited once before first use (§2.4)."""
        adapter = self.adapter_for(request)
        if id(adapter) not in self._initialized:
            initialize = getattr(adapter, "initialize", None)
            if initialize is not None:
                await initialize()
            self._initialized.add(id(adapter))
        return adapter

    def _build_complete_chain(self) -> CompleteNext:
        async def terminal(request: Request) -> Response:
            return await (await self._ready(request)).complete(request)

        chain: CompleteNext = terminal
        for mw in reversed(self.middleware):
            method = getattr(mw, "complete", None)
            if method is None and not hasattr(mw, "stream") and callable(mw):
                method = mw
            if method is not None:
                chain = _bind(method, chain)
        return chain

    def _build_stream_chain(self) -> StreamNext:
        async def terminal(request: Request) -> AsyncIterator[StreamEvent]:
            adapter = await self._ready(request)
            async for event in adapter.stream(request):
                yield event

        chain: StreamNext = terminal
        for mw in reversed(self.middleware):
            method = getattr(mw, "stream", None)
            if method is not None:
                chain = _bind(method, chain)
        return chain

    async def complete(self, request: Request) -> Response:
        """Send ``request`` to its provider and return the response (§4.1). No retry."""
        return await self._complete_chain(request)

    def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        """Stream ``request``'s events, FINISH last (§4.2). No retry. Close it or drain it."""
        return self._stream_chain(request)

    async def close(self) -> None:
        """Close every adapter that holds resources."""
        for adapter in self.providers.values():
            close = getattr(adapter, "close", None)
            if close is not None:
                await close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _with_project_header(options: dict[str, Any], project: str | None) -> dict[str, Any]:
    """OpenAI takes the project id as the ``OpenAI-Project`` header."""
    if not project:
        return options
    headers = {**dict(options.get("default_headers") or {}), "OpenAI-Project": project}
    return {**options, "default_headers": headers}


def _bind(method: Callable[[Request, _Next], _Out], inner: _Next) -> Callable[[Request], _Out]:
    def call(request: Request) -> _Out:
        return method(request, inner)

    return call


_default_client: Client | None = None


def set_default_client(client: Client | None) -> None:
    """Use ``client`` for high-level calls that pass none (§2.5); None resets to lazy from_env."""
    global _default_client
    _default_client = client


def get_default_client() -> Client:
    """The module-level client, created with :meth:`Client.from_env` on first use (§2.5)."""
    global _default_client
    if _default_client is None:
        _default_client = Client.from_env()
    return _default_client
