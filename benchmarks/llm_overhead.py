"""Overhead of the unified LLM client (issue 3 benchmark).

1. ``complete()`` overhead: a loopback server (a separate process, raw asyncio HTTP/1.1,
   keep-alive) answers every POST instantly with a fixed ``chat.completion``. In the same
   run we time N bare ``httpx.AsyncClient.post`` calls of the same JSON body (plus
   ``response.json()``) and N ``Client.complete()`` calls through OpenAICompatibleAdapter
   (request translation, middleware chain, error checks, response translation). Ratio goal:
   ours / bare <= 1.5.
2. SSE throughput: a 100,000-token Chat Completions stream (one ``chat.completion.chunk``
   per token, as llama.cpp sends it) fed in 64 KiB pieces to ``SSEParser``; goal >= 200,000
   events/s. Reference in the same run: splitting the same bytes on blank lines, which does
   no field parsing at all (a floor no correct parser beats). Also the full adapter stream
   (SSE + JSON + unified events) over the loopback socket, for information.

Each timing is the best of several interleaved runs (the machine is shared). Usage:
    .venv/bin/python benchmarks/llm_overhead.py [--requests 2000] [--tokens 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import time
from collections.abc import Awaitable, Callable

import httpx

from codeloop.llm.adapters.openai_compatible import OpenAICompatibleAdapter
from codeloop.llm.client import Client
from codeloop.llm.sse import SSEParser
from codeloop.llm.types import Message, Request, StreamEventType

COMPLETION = json.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 1, "model": "bench",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello there!"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
}).encode()


def chunk_frame(i: int) -> bytes:
    body = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1, "model": "bench",
            "choices": [{"index": 0, "delta": {"content": f"tok{i} "}, "finish_reason": None}]}
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


def stream_body(tokens: int) -> bytes:
    tail = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    return b"".join(chunk_frame(i) for i in range(tokens)) + tail


def _serve(port_pipe: multiprocessing.connection.Connection, tokens: int) -> None:
    streamed = stream_body(tokens)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length) if length else b""
                if b'"stream":true' in body.replace(b" ", b""):
                    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                                 b"content-length: " + str(len(streamed)).encode() + b"\r\n\r\n" + streamed)
                else:
                    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                                 b"content-length: " + str(len(COMPLETION)).encode() + b"\r\n\r\n" + COMPLETION)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port_pipe.send(server.sockets[0].getsockname()[1])
        await server.serve_forever()

    asyncio.run(main())


def _transport() -> httpx.AsyncHTTPTransport:
    # httpcore writes headers and body separately; without TCP_NODELAY, Nagle + delayed ACK
    # add milliseconds per call on loopback and would hide the client's own cost.
    return httpx.AsyncHTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])


async def best_of(runs: int, fn: Callable[[], Awaitable[None]]) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        await fn()
        best = min(best, time.perf_counter() - start)
    return best


async def bench_complete(port: int, n: int) -> tuple[float, float]:
    base = f"http://127.0.0.1:{port}/v1"
    adapter = OpenAICompatibleAdapter(base, api_key="k", transport=_transport())
    client = Client({"local": adapter})
    request = Request(model="bench", messages=[Message.system("Be brief."), Message.user("Say hello.")],
                      temperature=0.0, max_tokens=16)
    body = adapter.build_body(request, stream=False)
    bare = httpx.AsyncClient(base_url=base, headers={"authorization": "Bearer k"}, transport=_transport())

    async def run_bare() -> None:
        for _ in range(n):
            (await bare.post("/chat/completions", json=body)).json()

    async def run_ours() -> None:
        for _ in range(n):
            await client.complete(request)

    await run_bare()  # warm both connection pools
    await run_ours()
    bare_t = ours_t = float("inf")
    for _ in range(5):  # interleaved, so a load spike on the shared box hits both sides
        bare_t, ours_t = min(bare_t, await best_of(1, run_bare)), min(ours_t, await best_of(1, run_ours))
    await bare.aclose()
    await client.close()
    return bare_t / n, ours_t / n


def bench_sse(tokens: int) -> tuple[float, float]:
    raw = stream_body(tokens)
    pieces = [raw[i : i + 65536] for i in range(0, len(raw), 65536)]

    def ours() -> int:
        parser = SSEParser()
        return sum(len(parser.feed(p)) for p in pieces) + len(parser.finish())

    def reference() -> int:
        buf, count = b"", 0
        for p in pieces:
            buf += p
            *events, buf = buf.split(b"\n\n")
            count += len(events)
        return count

    assert ours() == reference() == tokens + 2
    timings = []
    for fn in (ours, reference):
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - start)
        timings.append(best)
    return (tokens + 2) / timings[0], (tokens + 2) / timings[1]


async def bench_adapter_stream(port: int, tokens: int) -> float:
    adapter = OpenAICompatibleAdapter(f"http://127.0.0.1:{port}/v1", stream_usage=False)
    request = Request(model="bench", messages=[Message.user("go")])

    async def run() -> None:
        deltas = 0
        async for event in adapter.stream(request):
            deltas += event.type == StreamEventType.TEXT_DELTA
        assert deltas == tokens, deltas

    elapsed = await best_of(3, run)
    await adapter.close()
    return tokens / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--tokens", type=int, default=100_000)
    args = parser.parse_args()
    receive, send = multiprocessing.Pipe(duplex=False)
    server = multiprocessing.Process(target=_serve, args=(send, args.tokens), daemon=True)
    server.start()
    port = receive.recv()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        bare, ours = asyncio.run(bench_complete(port, args.requests))
        print(f"complete(): bare httpx {bare * 1e6:8.1f} us/call | Client.complete {ours * 1e6:8.1f} us/call"
              f" | ratio {ours / bare:.2f}x (goal <= 1.5x)")
        parsed, floor = bench_sse(args.tokens)
        print(f"SSE parse: {parsed:,.0f} events/s (goal >= 200,000) | blank-line split reference "
              f"{floor:,.0f} events/s | ratio {floor / parsed:.2f}x slower than the floor")
        rate = asyncio.run(bench_adapter_stream(port, args.tokens))
        print(f"adapter stream over loopback (SSE + JSON + unified events): {rate:,.0f} text deltas/s")
    finally:
        server.terminate()
        server.join(5)


if __name__ == "__main__":
    main()
