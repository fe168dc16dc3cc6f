"""``codeloop codali``: answer agent requests from the local index (docs/codali.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from codeloop.cli.app import command_group
from codeloop.cli.errors import fail

codali_app = command_group("codali", "Context broker for stateless agents (AGENT_REQUEST v1 → "
                                     "CODALI_RESPONSE v1). Example: codeloop codali answer --repo . reply.txt")


@codali_app.command("answer")
def answer(
    source: Annotated[str, typer.Argument(help="File holding the agent's reply, or - for stdin.")] = "-",
    repo: Annotated[Path, typer.Option("--repo", help="Repository root.")] = Path("."),
    budget: Annotated[int | None, typer.Option(min=0, max=100_000_000, help="Most characters of file content in the response.")]
    = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the response as JSON.")] = False,
) -> None:
    """Read one reply holding an AGENT_REQUEST v1, print the CODALI_RESPONSE v1.
    Example: codeloop codali answer --repo . reply.txt"""
    # Imported here, not at module level: `codeloop --help` must not pay for the index and LLM layers.
    from codeloop.codali.answer import answer_request_sync
    from codeloop.codali.request import AgentRequestError, parse_agent_request
    from codeloop.codali.response import dumps

    if not repo.is_dir():
        raise fail(f"--repo {repo} is not a directory; pass the repository root")
    if source == "-":
        text = sys.stdin.read()
    else:
        try:
            text = Path(source).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            message = f"cannot read {source}: {exc.__class__.__name__}: {exc}; pass a UTF-8 text file or -"
            raise fail(message) from None
    try:
        request = parse_agent_request(text)
    except AgentRequestError as exc:
        raise fail(f"{exc} (in {'stdin' if source == '-' else source})") from None
    response = answer_request_sync(request, repo, content_budget=budget)
    typer.echo(dumps(response, json_out), nl=False)


@codali_app.command("run")
def run(
    task: Annotated[str, typer.Option("--task", help="What the team should do.")],
    repo: Annotated[Path, typer.Option("--repo", help="Repository root.")] = Path("."),
    model: Annotated[str | None, typer.Option(help="Model of every role (unless set per role).")] = None,
    provider: Annotated[str | None, typer.Option(help="openai, anthropic, gemini or openai_compatible.")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="API root, e.g. http://127.0.0.1:8080/v1.")]
    = None,
    librarian_model: Annotated[str | None, typer.Option(help="Model of the librarian.")] = None,
    architect_model: Annotated[str | None, typer.Option(help="Model of the architect.")] = None,
    builder_model: Annotated[str | None, typer.Option(help="Model of the builder.")] = None,
    critic_model: Annotated[str | None, typer.Option(help="Model of the critic.")] = None,
    summarizer_model: Annotated[str | None, typer.Option(help="Cheaper model that summarizes history.")] = None,
    context_window: Annotated[int | None, typer.Option(
        min=512, max=10_000_000, help="Tokens; history is summarized at 90%. Default 32768 (8192 for the local model).")] = None,
    max_rounds: Annotated[int, typer.Option(min=1, max=20, help="Plan/build/critic loops before FAIL.")] = 3,
    max_builder_steps: Annotated[int, typer.Option(min=1, max=200, help="Builder model calls per round.")] = 25,
    max_context_requests: Annotated[int, typer.Option(
        min=0, max=20, help="AGENT_REQUESTs answered per role turn.")] = 4,
    max_output_tokens: Annotated[int | None, typer.Option(
        min=16, max=1_000_000, help="Longest reply per model call. Default 2048 (768 for the local model).")] = None,
    builder_tools: Annotated[str | None, typer.Option(
        help="How the builder gets its tools: native (API tool calls), text (taught in the prompt, "
             "calls parsed from the reply) or constrained (replies sampled under a JSON Schema: one call "
             "or the answer; llama.cpp/vLLM). Default: constrained for the local model, text for other "
             "openai_compatible servers, else native.")] = None,
    check: Annotated[str | None, typer.Option(help="Command the critic runs (e.g. 'pytest -q').")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON event per line, then the result.")] = False,
    transcript: Annotated[Path | None, typer.Option(
        help="Write the run's whole shared history (every role's messages) to this file at the end.")] = None,
    max_cost: Annotated[float | None, typer.Option(
        "--max-cost", min=0.0, metavar="USD", help="Stop before a call that could take the run over USD "
        "(list price, every role included; docs/agent.md \"Budgets\").")] = None,
    max_tokens: Annotated[int | None, typer.Option(
        "--max-tokens", min=1, metavar="N", help="Stop before a call that could take input + output tokens over N.")]
    = None,
    max_time: Annotated[str | None, typer.Option(
        "--max-time", metavar="DURATION", help="Stop after DURATION (90s, 5m, 1h30m); cancels a call in flight.")]
    = None,
) -> None:
    """Run librarian → architect → builder → critic until the critic passes.
    Example: codeloop codali run --task "add a --verbose flag" --model gpt-4.1 --check 'pytest -q'"""
    import asyncio
    import json
    import os

    from codeloop.cli.model_choice import UsageError, build_client, choose_model
    from codeloop.codali.pipeline import (
        ModelChoice,
        PipelineConfig,
        PipelineResult,
        RolesPipeline,
        history_transcript,
    )

    if not task.strip():
        raise fail("--task is empty; say what the team should do")
    if not repo.is_dir():
        raise fail(f"--repo {repo} is not a directory; pass the repository root")
    if transcript is not None and not transcript.parent.is_dir():
        raise fail(f"--transcript {transcript}: the directory {transcript.parent} does not exist")
    if builder_tools not in (None, "native", "text", "constrained"):
        raise fail(f"--builder-tools {builder_tools!r}: use native, text or constrained")
    try:
        choice = choose_model(provider, None, model, base_url, dict(os.environ))
    except UsageError as exc:
        raise fail(str(exc)) from None
    if choice.local:
        # No key and no --base-url: the embedded default of `codeloop run`, the local llama.cpp model.
        from codeloop.cli.model_choice import LOCAL_MODEL, start_local_model
        from codeloop.llm.llama_install import MODELS, LocalModelError

        if (model or LOCAL_MODEL) not in MODELS:
            raise fail(f"no API key set, so the local llama.cpp model runs, and it has no model {model!r}: "
                        f"pass --model {' or --model '.join(MODELS)}, or set OPENAI_API_KEY, ANTHROPIC_API_KEY "
                        "or GEMINI_API_KEY, or pass --base-url of an OpenAI-compatible server")
        typer.echo("No API key set: using the local llama.cpp model "
                   "(first use installs it; this can take a while).", err=True)
        try:
            choice = start_local_model(choice)
        except (LocalModelError, OSError) as exc:
            raise fail(f"the local model could not start: {exc}") from None
        model = choice.model
    main_model = model or choice.model
    roles = [librarian_model, architect_model, builder_model, critic_model]
    if main_model is None and not all(roles):
        raise fail("no model given: pass --model (or a --<role>-model for every role)")

    # The local server holds 8192 tokens, and a 1.5B model on a CPU writes a few tokens a
    # second: a rambling reply capped at 768 tokens costs about a minute, not several.
    window = context_window or (8192 if choice.local else 32_768)
    output_cap = max_output_tokens or (768 if choice.local else 2048)

    def pick(name: str | None) -> ModelChoice:
        return ModelChoice(name or main_model or "", choice.provider, window)

    config = PipelineConfig(pick(librarian_model), pick(architect_model), pick(builder_model), pick(critic_model),
                            pick(summarizer_model), max_rounds=max_rounds, check_command=check,
                            max_builder_steps=max_builder_steps, max_context_requests=max_context_requests,
                            max_output_tokens=output_cap,
                            builder_tools=builder_tools or ("constrained" if choice.local else
                                                            "text" if choice.profile == "text" else "native"))

    def on_event(kind: str, data: dict[str, object]) -> None:
        if json_out:
            typer.echo(json.dumps({"kind": kind, "data": data}))
        elif kind == "reply":  # what each role says, as it says it
            calls = data.get("tool_calls")
            names = ", ".join(str(c) for c in calls) if isinstance(calls, list) else ""
            said = " ".join(filter(None, [str(data["text"]).strip(), f"(tool calls: {names})" if names else ""]))
            typer.echo(f"[{data['role']}] {said}", err=True)
        else:
            typer.echo(f"[{kind}] " + ", ".join(f"{k}={v}" for k, v in data.items()), err=True)

    budget = None
    if max_cost is not None or max_tokens is not None or max_time is not None:
        from codeloop.agent.budget import Budget, BudgetLimits, BudgetPriceError, require_price
        from codeloop.config import parse_duration

        try:
            seconds = parse_duration(max_time) if max_time is not None else None
            if max_cost is not None:
                for role in {config.librarian, config.architect, config.builder, config.critic, config.summarizer}:
                    require_price(role.model)
        except (ValueError, BudgetPriceError) as exc:
            raise fail(f"--max-time {exc}" if isinstance(exc, ValueError) and not isinstance(exc, BudgetPriceError)
                       else str(exc)) from None
        budget = Budget(BudgetLimits(max_cost, max_tokens, seconds))

    async def go() -> PipelineResult:
        client = build_client(choice)
        try:
            return await RolesPipeline(client, repo, config, on_event=on_event, budget=budget).run(task)
        finally:
            await client.close()

    try:
        result = asyncio.run(go())
    except Exception as exc:  # a provider outage ends the run with one line, not a traceback
        raise fail(f"the run stopped: {exc.__class__.__name__}: {exc}") from None
    if transcript is not None:
        transcript.write_text(history_transcript(result), encoding="utf-8")
    summary = {"status": result.status, "rounds": result.rounds, "plan_targets": list(result.plan_targets),
               "touched_files": list(result.touched_files), "history_compactions": result.compactions,
               "reasons": list(result.critic.reasons) if result.critic else []}
    if json_out:
        typer.echo(json.dumps({"kind": "result", "data": summary}))
    else:
        typer.echo(f"{result.status} after {result.rounds} round(s); touched: "
                   f"{', '.join(result.touched_files) or 'nothing'}")
        for reason in result.critic.reasons if result.critic else ():
            typer.echo(f"  - {reason}")
    if result.status != "PASS":
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``codeloop codali ...`` to the main app."""
    app.add_typer(codali_app, name="codali")
