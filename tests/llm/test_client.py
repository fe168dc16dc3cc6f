"""Core client of unified-llm spec §2.2–2.5, §4.1–4.2: routing, middleware, default client."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from codeloop.llm import client as client_module
from codeloop.llm.adapters.scripted import ScriptedAdapter, text_response
from codeloop.llm.client import Client, CompleteNext, StreamNext, get_default_client, set_default_client
from codeloop.llm.errors import ConfigurationError, ServerError
from codeloop.llm.types import Message, Request, Response, StreamEvent, StreamEventType


def req(provider: str | None = None, text: str = "hi") -> Request:
    return Request(model="m", messages=[Message.user(text)], provider=provider)


async def test_2_2_routes_by_provider_and_defaults_to_first_registered() -> None:
    a = ScriptedAdapter([text_response("from a")], name="a")
    b = ScriptedAdapter([text_response("from b")], name="b")
    client = Client({"a": a, "b": b})
    assert client.default_provider == "a"
    assert (await client.complete(req("b"))).text == "from b"
    assert (await client.complete(req())).text == "from a"
    assert len(a.requests) == 1 and len(b.requests) == 1


async def test_2_2_explicit_default_provider() -> None:
    b = ScriptedAdapter([text_response("b")], name="b")
    client = Client({"a": ScriptedAdapter(name="a"), "b": b}, default_provider="b")
    assert (await client.complete(req())).text == "b"


async def test_2_2_no_provider_is_a_configuration_error_naming_the_fix() -> None:
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        await Client().complete(req())
    with pytest.raises(ConfigurationError, match="'nope' is not registered"):
        await Client({"a": ScriptedAdapter()}).complete(req("nope"))
    with pytest.raises(ConfigurationError, match="default provider"):
        Client({"a": ScriptedAdapter()}, default_provider="zzz")


async def test_4_1_complete_never_retries() -> None:
    adapter = ScriptedAdapter([ServerError("boom", provider="s"), text_response("late")])
    with pytest.raises(ServerError):
        await Client({"s": adapter}).complete(req())
    assert len(adapter.requests) == 1


async def test_2_3_middleware_onion_order_for_complete() -> None:
    log: list[str] = []

    def named(tag: str):  # type: ignore[no-untyped-def]
        async def mw(request: Request, call_next: CompleteNext) -> Response:
            log.append(f"{tag}>")
            response = await call_next(request)
            log.append(f"<{tag}")
            return response

        return mw

    adapter = ScriptedAdapter([text_response("ok")])
    client = Client({"s": adapter}, middleware=[named("first"), named("second")])
    await client.complete(req())
    assert log == ["first>", "second>", "<second", "<first"]


async def test_2_3_middleware_can_modify_request_and_response() -> None:
    class Rewrite:
        async def complete(self, request: Request, call_next: CompleteNext) -> Response:
            from dataclasses import replace

            response = await call_next(replace(request, model="rewritten"))
            return replace(response, id="tagged")

    adapter = ScriptedAdapter([text_response("ok")])
    response = await Client({"s": adapter}, middleware=[Rewrite()]).complete(req())
    assert adapter.requests[0].model == "rewritten" and response.id == "tagged"


async def test_2_3_middleware_wraps_streams_in_onion_order() -> None:
    log: list[str] = []

    class Observe:
        def __init__(self, tag: str) -> None:
            self.tag = tag

        async def stream(self, request: Request, call_next: StreamNext) -> AsyncIterator[StreamEvent]:
            log.append(f"{self.tag}>")
            async for event in call_next(request):
                if event.type == StreamEventType.TEXT_DELTA:
                    from dataclasses import replace

                    event = replace(event, delta=(event.delta or "").upper())
                yield event
            log.append(f"<{self.tag}")

    adapter = ScriptedAdapter([text_response("hello world")])
    client = Client({"s": adapter}, middleware=[Observe("first"), Observe("second")])
    deltas = [e.delta async for e in client.stream(req()) if e.type == StreamEventType.TEXT_DELTA]
    assert "".join(d or "" for d in deltas) == "HELLO WORLD"
    assert log == ["first>", "second>", "<second", "<first"]


async def test_4_2_stream_ends_with_finish_carrying_the_response() -> None:
    client = Client({"s": ScriptedAdapter([text_response("abc")])})
    events = [e async for e in client.stream(req())]
    assert events[0].type == StreamEventType.STREAM_START
    assert events[-1].type == StreamEventType.FINISH
    assert events[-1].response is not None and events[-1].response.text == "abc"


def test_2_2_from_env_with_no_keys_registers_nothing() -> None:
    client = Client.from_env(env={})
    assert client.providers == {} and client.default_provider is None


async def test_2_5_default_client_can_be_set_and_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    mine = Client({"s": ScriptedAdapter()})
    set_default_client(mine)
    try:
        assert get_default_client() is mine
        set_default_client(None)
        for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
            monkeypatch.delenv(var, raising=False)
        lazy = get_default_client()
        assert lazy is not mine and lazy.providers == {}
    finally:
        client_module.set_default_client(None)


async def test_close_closes_every_adapter() -> None:
    a, b = ScriptedAdapter(name="a"), ScriptedAdapter(name="b")
    async with Client({"a": a, "b": b}):
        pass
    assert a.closed and b.closed


async def test_scripted_adapter_out_of_script_says_which_call() -> None:
    with pytest.raises(ConfigurationError, match="no scripted answer left for call #1"):
        await ScriptedAdapter().complete(req())


async def test_2_4_initialize_runs_once_before_first_use() -> None:
    class Checked(ScriptedAdapter):
        def __init__(self) -> None:
            super().__init__([text_response("a"), text_response("b")])
            self.inits = 0

        async def initialize(self) -> None:
            self.inits += 1

    adapter = Checked()
    client = Client({"s": adapter})
    assert adapter.inits == 0  # construction does no I/O
    await client.complete(req())
    _ = [e async for e in client.stream(req())]
    assert adapter.inits == 1


async def test_2_4_initialize_failure_surfaces_as_its_error() -> None:
    class Broken(ScriptedAdapter):
        async def initialize(self) -> None:
            raise ConfigurationError("endpoint unreachable")

    with pytest.raises(ConfigurationError, match="endpoint unreachable"):
        await Client({"s": Broken()}).complete(req())
