"""Custom commands and images in (issue 21), end to end through ``codeloop run``: the real
command against loopback model servers (tests/cli/chat_server.py; tests/cli/fault_server.py
for the four wire APIs, whose request bodies are asserted part by part); the chat parts in a
real terminal (tmux, as tests/cli/test_interactive_tmux.py)."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatServer, text_reply, tool_reply
from fault_server import FaultServer
from test_interactive_tmux import launch
from test_run_cli import CODELOOP, isolated_env, run

NATIVE = ["--profile", "anthropic", "--approval", "never-ask", "--sandbox", "off"]
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(64))
B64 = base64.b64encode(PNG).decode()
APIS = {
    # provider, base URL suffix, key variable, the image part the wire API expects
    "responses": ("openai", "/v1", "OPENAI_API_KEY",
                  {"type": "input_image", "image_url": f"data:image/png;base64,{B64}", "detail": "auto"}),
    "chat_completions": ("openai_compatible", "/v1", "OPENAI_API_KEY",
                         {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64}"}}),
    "anthropic": ("anthropic", "", "ANTHROPIC_API_KEY",
                  {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": B64}}),
    "gemini": ("gemini", "", "GEMINI_API_KEY", {"inlineData": {"mimeType": "image/png", "data": B64}}),
}


def user_parts(api: str, body: dict[str, Any]) -> list[Any]:
    """The parts of the first user message of a request body, in the wire API's shape."""
    if api == "gemini":
        return next(c for c in body["contents"] if c["role"] == "user")["parts"]
    key = "input" if api == "responses" else "messages"
    return next(m for m in body[key] if m.get("role") == "user")["content"]


def write_command(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.md"
    path.write_text(text)
    return path


@pytest.mark.parametrize("api", sorted(APIS))
def test_image_option_sends_the_image_part_each_wire_api_expects(api: str, workspace: Path) -> None:
    provider, suffix, key, part = APIS[api]
    (workspace.parent / "shot.png").write_bytes(PNG)
    with FaultServer() as server:
        server.replies.append(text_reply("A red square."))
        done = subprocess.run(
            [CODELOOP, "run", "what is in this picture?", "--image", str(workspace.parent / "shot.png"),
             "--cwd", str(workspace), "--provider", provider, "--base-url", server.base_url + suffix,
             "--profile", "anthropic" if api == "chat_completions" else provider, "--approval", "never-ask",
             "--sandbox", "off"],
            capture_output=True, text=True, env=isolated_env(workspace, **{key: "test-key"}), timeout=120,
            stdin=subprocess.DEVNULL)
        bodies = server.bodies
    assert done.returncode == 0, done.stderr
    assert "A red square." in done.stdout
    parts = user_parts(api, bodies[0])
    # Anthropic marks the last block of the conversation as a prompt-cache breakpoint.
    assert part in [{k: v for k, v in p.items() if k != "cache_control"} for p in parts]
    assert "what is in this picture?" in json.dumps(parts)


def test_images_over_the_limit_and_bad_files_are_refused_before_anything_is_sent(server: ChatServer,
                                                                                 workspace: Path) -> None:
    big = workspace / "big.png"
    big.write_bytes(PNG + b"\x00" * (5 * 1024 * 1024))
    (workspace / "fake.png").write_text("not a picture\n")
    (workspace / "empty.gif").write_bytes(b"")
    (workspace / "notes.txt").write_text("hello\n")
    cases = [
        ([str(big), "--provider", "anthropic"], "over the 5 MB image limit of anthropic"),
        ([str(workspace / "fake.png")], "is not a png image"),
        ([str(workspace / "empty.gif")], "is empty"),
        ([str(workspace / "missing.png")], "cannot read"),
        ([str(workspace / "notes.txt")], "not an image file name"),
        ([str(workspace)], "not an image file name"),
    ]
    for args, expected in cases:
        env = isolated_env(workspace, ANTHROPIC_API_KEY="k")
        done = run(["look", "--image", *args, "--base-url", server.base_url, *NATIVE], workspace, env)
        assert done.returncode == 2, (args, done.stderr)
        assert expected in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert "Pillow, which is not installed" in run(
        ["look", "--image", str(big), "--provider", "anthropic", "--base-url", server.base_url, *NATIVE],
        workspace, isolated_env(workspace, ANTHROPIC_API_KEY="k")).stderr
    # The OpenAI-compatible limit is higher: the same image goes there.
    server.replies.append(text_reply("big"))
    assert run(["look", "--image", str(big), "--base-url", server.base_url, *NATIVE], workspace).returncode == 0
    assert len(server.requests) == 1


def test_a_model_without_image_input_gets_a_clear_message(server: ChatServer, workspace: Path) -> None:
    (workspace / "shot.png").write_bytes(PNG)
    done = run(["look", "--image", str(workspace / "shot.png"), "--model", "qwen2.5-coder-1.5b-instruct",
                "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 2
    assert "qwen2.5-coder-1.5b-instruct takes no images" in done.stderr
    # No key and no server: the local model, which is refused before it is installed or started.
    done = run(["look", "--image", str(workspace / "shot.png")], workspace)
    assert done.returncode == 2 and "the local model takes no images" in done.stderr, done.stderr
    assert server.requests == []


def test_a_project_command_expands_arguments_and_files_and_restricts_its_tools(server: ChatServer,
                                                                                workspace: Path) -> None:
    write_command(workspace / ".codeloop" / "commands", "review", (
        "---\ndescription: Review a file\nallowed-tools: read_file, grep\nmodel: claude-haiku-4-5\n---\n"
        "Review $ARGUMENTS carefully. Our rules:\n@rules.md\n"))
    (workspace / "rules.md").write_text("1. No globals.\n")
    server.replies.extend([tool_reply("write_file", {"file_path": "out.txt", "content": "x\n"}),
                           text_reply("Reviewed.")])
    done = run(["/review app.py", "--json", "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 0, done.stderr
    prompt = server.requests[0]["messages"][-1]["content"]
    assert prompt == "Review app.py carefully. Our rules:\nrules.md:\n```\n1. No globals.\n```"
    assert server.requests[0]["model"] == "claude-haiku-4-5"
    refusal = next(m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool")
    assert "the command /review allows only read_file, grep, so write_file was not run" in refusal
    assert not (workspace / "out.txt").exists()
    # --model beats the command's model; a command without $ARGUMENTS gets them appended.
    write_command(workspace / ".codeloop" / "commands", "fix", "Fix the bug.")
    server.replies.extend([tool_reply("write_file", {"file_path": "out.txt", "content": "x\n"}), text_reply("ok")])
    done = run(["/fix in parse()", "--json", "--model", "claude-sonnet-4-5", "--base-url", server.base_url,
                *NATIVE], workspace)
    assert done.returncode == 0, done.stderr
    assert server.requests[2]["messages"][-1]["content"] == "Fix the bug.\n\nin parse()"
    assert server.requests[2]["model"] == "claude-sonnet-4-5"
    assert (workspace / "out.txt").read_text() == "x\n"  # no allowed-tools: every tool


def test_user_commands_and_project_commands_of_the_same_name(server: ChatServer, workspace: Path) -> None:
    user = workspace.parent / "userconf" / "commands"
    write_command(user, "hello", "Say hello to $ARGUMENTS.")
    write_command(user, "shared", "from the user")
    write_command(workspace / ".codeloop" / "commands", "shared", "from the project")
    server.replies.extend([text_reply("hi"), text_reply("ok")])
    assert run(["/hello Ada", "--base-url", server.base_url, *NATIVE], workspace).returncode == 0
    assert run(["/shared", "--base-url", server.base_url, *NATIVE], workspace).returncode == 0
    assert [r["messages"][-1]["content"] for r in server.requests] == ["Say hello to Ada.", "from the project"]


@pytest.mark.parametrize(("text", "expected"), [
    ("---\ndescripton: x\n---\nbody", "review.md:2: unknown key 'descripton': did you mean 'description'?"),
    ("---\ndescription: x\nbody", "review.md:1: the front matter starting here has no closing '---' line"),
    ("---\ndescription x\n---\nbody", "review.md:2: expected 'key: value'"),
    ("---\nmodel: a\nmodel: b\n---\nbody", "review.md:3: 'model' is set twice"),
    ("---\nmodel:\n---\nbody", "review.md:2: 'model' has no value"),
    ("---\nallowed-tools: read_file, no such\n---\nbody", "is not a list of tool names"),
    ("---\nallowed-tools: read_file, readfile\n---\nbody", "allowed-tools names readfile, which is no tool here"),
])
def test_bad_command_files_are_clear_errors(server: ChatServer, workspace: Path, text: str, expected: str) -> None:
    write_command(workspace / ".codeloop" / "commands", "review", text)
    done = run(["/review", "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert server.requests == []


def test_at_paths_stay_in_the_workspace_and_missing_files_are_errors(server: ChatServer, workspace: Path) -> None:
    (workspace.parent / "secret.txt").write_text("secret\n")
    (workspace / "link.txt").symlink_to(workspace.parent / "secret.txt")
    commands = workspace / ".codeloop" / "commands"
    write_command(commands, "up", "Read @../secret.txt")
    write_command(commands, "link", "Read @link.txt")
    write_command(commands, "gone", "Read @missing.txt now")
    for name, expected in [("up", "outside the workspace"), ("link", "outside the workspace"),
                           ("gone", "No such file or directory: 'missing.txt'")]:
        done = run([f"/{name}", "--base-url", server.base_url, *NATIVE], workspace)
        assert done.returncode == 2, done.stderr
        assert expected in done.stderr and f"/{name}" in done.stderr, done.stderr
    done = run(["/nope x", "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 2 and "unknown command /nope" in done.stderr and "/gone" in done.stderr
    assert server.requests == []
    # A task that starts with an existing directory is a task, not a command.
    server.replies.append(text_reply("cleaned"))
    assert run(["/tmp is full, clean it", "--base-url", server.base_url, *NATIVE], workspace).returncode == 0
    assert server.requests[0]["messages"][-1]["content"] == "/tmp is full, clean it"
    server.requests.clear()
    assert "secret" not in json.dumps(server.requests)


def test_chat_help_lists_commands_runs_them_and_attaches_mentioned_images(server: ChatServer,
                                                                         tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    write_command(workspace / ".codeloop" / "commands", "explain",
                  "---\ndescription: Explain a file in plain words\n---\nExplain $ARGUMENTS.")
    (workspace / "shot.png").write_bytes(PNG)
    server.replies.extend([text_reply("Explained."), text_reply("A red square.")])
    pane = launch(server, tmp_path, "--approval", "never-ask")
    try:
        pane.wait_for("Ctrl-C aborts")
        pane.type_line("/help")
        pane.wait_for("Explain a file in plain words")
        pane.wait_for("›", count=2)
        pane.type_line("/explain main.py")
        pane.wait_for("Explained.")
        pane.wait_for("›", count=3)
        assert server.requests[-1]["messages"][-1] == {"role": "user", "content": "Explain main.py."}
        pane.type_line("what is on @missing.png?")
        pane.wait_for("No such file or directory: 'missing.png'")
        pane.wait_for("›", count=4)
        pane.type_line("/nope")
        pane.wait_for("unknown command /nope")
        pane.wait_for("›", count=5)
        pane.type_line("what is on @shot.png?")
        pane.wait_for("A red square.")
        content = server.requests[-1]["messages"][-1]["content"]
        assert content[0] == {"type": "text", "text": "what is on @shot.png?"}
        assert content[1] == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64}"}}
        assert len(server.requests) == 2
        pane.type_line("/exit")
        pane.wait_for("EXITED=0")
    finally:
        pane.close()
