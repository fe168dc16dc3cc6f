"""Architecture rules that import contracts cannot express (docs/architecture.md).

``lint-imports`` ([tool.importlinter] in pyproject.toml) checks who imports whom. These tests
read the source with ``ast`` and check what a module *does*:

- only the runner starts a process, apart from a short list of named exceptions;
- a face (cli, relay, spaces, codali) changes the workspace only through the tool pipeline,
  never by calling an ``ExecutionEnvironment``'s write/delete/exec methods itself, and reads a
  file only through it too;
- the command and path policy is evaluated only in the pipeline's POLICY step modules;
- no approval state beside the pending store: no approver built outside the pipeline's factory,
  no held calls or verdicts kept by a face (issue 34).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "codeloop"

RUNNER = "environments/runner.py"
"""The one place where a workspace command's process is started and killed."""

PROCESS_EXCEPTIONS = {
    "environments/sandbox.py": "the bubblewrap probe: runs `bwrap ... /bin/true` once to learn whether a "
    "sandbox can exist here, before any sandboxed environment (and its runner) is built",
    "environments/ssh.py": "the SSH environment: asyncssh starts processes on the remote host (its own "
    "wrapper puts them in a process group and kills that group); nothing starts locally",
    "llm/llama_install.py": "the llama-server installer: pip and the built binary's --version, run on the "
    "host outside any workspace; llm/ must not import environments/ (import contract llm-standalone)",
    "llm/llama_server.py": "the llama-server launcher: a daemon that outlives the command "
    "(start_new_session, stopped by pid from `scripts/local-llm stop`), not a workspace command",
    "environments/seccomp_filter.py": "builds the sandbox's seccomp BPF with libseccomp's Python "
    "bindings, which exist only for the system python3 on Debian: when the venv cannot import them it "
    "runs `python3` once per process to write the filter (no workspace, no user input)",
    "environments/host_guard.py": "git reading a configuration file (`git config --file F --no-includes "
    "--list`, `git config --get core.hooksPath`) with a minimal environment in `/`, synchronously while a "
    "sandboxed command's bwrap argv is built and after it ran; it runs nothing of the workspace",
    "policy/bash_view.py": "the policy reads a command line the way bash does by asking bash itself "
    "(`declare -f` of the line wrapped in a function), in a throw-away bubblewrap sandbox with the file "
    "system read-only and no network; nothing of the workspace runs",
    "sessions/snapshots.py": "git plumbing on codeloop's own snapshot repository (under the state "
    "directory, isolated from every user setting, with a timeout): codeloop's bookkeeping around a call, "
    "not a command of the workspace; it must run whatever sandbox the session's commands have",
    "mcp/connection.py": "MCP stdio servers: the `mcp` library's stdio_client starts the server process "
    "and owns its lifetime; codeloop only hands it the configured command",
    "batch/pool.py": "`codeloop batch --workers N`: a ProcessPoolExecutor's worker processes, each running "
    "whole sessions (whose commands go through the runner); they die with the batch (each watches it through a pidfd)",
}
"""Modules other than the runner that may start a process, each with its reason."""

PROCESS_MODULES = {"subprocess", "pty", "multiprocessing", "asyncssh", "pexpect", "mcp.client.stdio"}
"""Importing one of these is starting a process (or preparing to)."""

OS_PROCESS_PREFIXES = ("fork", "exec", "spawn", "posix_spawn")
OS_PROCESS_NAMES = {"system", "popen", "forkpty"}
ASYNCIO_PROCESS_NAMES = {"create_subprocess_exec", "create_subprocess_shell", "subprocess_exec", "subprocess_shell"}

FACES = ("cli", "relay", "spaces", "codali", "batch")

WORKSPACE_EFFECTS = {"write_file", "delete_file", "exec_command", "run_process"}
"""ExecutionEnvironment's write/delete/exec methods, and the runner itself."""

FACE_EFFECT_EXCEPTIONS = {
    "relay/clipboard.py": "copies the outbox to the user's clipboard with the host's clipboard tool "
    "(run_process); it touches no workspace file, so no tool call is involved",
}
"""Face modules that may call those methods for good, each with its reason."""

WORKSPACE_OPERATION_MODULES = {"ops", "workspace_ops"}
"""How faces name tools/workspace_ops.py: its functions are the one set of workspace operations
(a face's registered tools call them, and the pipeline runs those tools), so a call through
them is not a bypass even when it shares a name with an environment method."""


@functools.cache
def _modules() -> list[tuple[str, ast.Module]]:
    # Parsed once for all the tests of this file (read-only: no test changes a tree).
    return [
        (path.relative_to(SRC).as_posix(), ast.parse(path.read_text("utf-8"), str(path)))
        for path in sorted(SRC.rglob("*.py"))
    ]


def _line(finding: str) -> int:
    return int(finding.split(":", 1)[0])


def _is_os_process_name(name: str) -> bool:
    return name in OS_PROCESS_NAMES or name.startswith(OS_PROCESS_PREFIXES)


def process_starts(tree: ast.Module) -> list[str]:
    """Each place in ``tree`` that starts a process, as ``line: what``."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name in PROCESS_MODULES
                      or a.name.split(".")[0] in PROCESS_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module in PROCESS_MODULES or node.module.split(".")[0] in PROCESS_MODULES:
                found.append(f"{node.lineno}: from {node.module} import ...")
            elif node.module == "os":
                found += [f"{node.lineno}: from os import {a.name}" for a in node.names
                          if _is_os_process_name(a.name)]
            elif node.module == "asyncio":
                found += [f"{node.lineno}: from asyncio import {a.name}" for a in node.names
                          if a.name in ASYNCIO_PROCESS_NAMES]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr, owner = node.func.attr, node.func.value
            if isinstance(owner, ast.Name) and owner.id == "os" and _is_os_process_name(attr):
                found.append(f"{node.lineno}: os.{attr}()")
            elif attr in ASYNCIO_PROCESS_NAMES:
                found.append(f"{node.lineno}: .{attr}()")
    return sorted(found, key=_line)


def workspace_effects(tree: ast.Module) -> list[str]:
    """Each call in ``tree`` of an ExecutionEnvironment write/delete/exec method, as ``line: what``."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            through_ops = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id in WORKSPACE_OPERATION_MODULES
            if name in WORKSPACE_EFFECTS and not through_ops:
                found.append(f"{node.lineno}: {name}()")
    return sorted(found, key=_line)


def test_only_the_runner_and_the_named_exceptions_start_processes() -> None:
    starts = {rel: process_starts(tree) for rel, tree in _modules()}
    allowed = {RUNNER, *PROCESS_EXCEPTIONS}
    offenders = {rel: where for rel, where in starts.items() if where and rel not in allowed}
    assert not offenders, (
        "only environments/runner.py starts processes (docs/architecture.md, 'Where a process starts "
        f"and dies'); run the command through the environment, or add a named exception with its reason: {offenders}"
    )
    stale = sorted(rel for rel in allowed if not starts.get(rel))
    assert not stale, f"these modules no longer start a process; remove them from PROCESS_EXCEPTIONS: {stale}"


def test_faces_change_the_workspace_only_through_the_tool_pipeline() -> None:
    effects = {rel: workspace_effects(tree) for rel, tree in _modules() if rel.split("/")[0] in FACES}
    allowed = set(FACE_EFFECT_EXCEPTIONS)
    offenders = {rel: where for rel, where in effects.items() if where and rel not in allowed}
    assert not offenders, (
        "a face writes, deletes or runs in the workspace itself; make it a call of the face's pipeline "
        f"(tools/call_path.py, docs/architecture.md, 'Where a call is approved'): {offenders}"
    )
    stale = sorted(rel for rel in allowed if not effects.get(rel))
    assert not stale, (
        f"these face modules no longer call the environment directly; remove them from the allow-list: {stale}"
    )


FACE_READS = {"read_bytes": 1, "read_file": 1, "read_text": 2}
"""ExecutionEnvironment's (and workspace_ops') file reads, with the positional arguments they take at
least (``env.read_bytes(path)``, ``ops.read_text(env, path)``; ``Path.read_bytes()`` takes none)."""

FACE_READ_EXCEPTIONS = {
    "relay/executor.py": "after a crash, compares a file with the digest the journal recorded before the "
    "write (recover_effect); nothing read is shown to anyone",
}
"""Face modules that may read a workspace file outside the pipeline, each with its reason."""

POLICY_EVALUATORS = {"evaluate_command", "evaluate_path", "judge_env", "is_read_only_line"}
"""The command and path policy's verdicts (codeloop.policy)."""

POLICY_STEP_MODULES = {
    "tools/preset_policy.py": "the POLICY step of a policy preset (the relay's session policy, a space's "
    "policy JSON), judged with the workspace root",
}
"""Modules outside ``policy/`` that may evaluate the command or path policy, each with its reason."""


def calls_named(tree: ast.Module, names: set[str] | dict[str, int]) -> list[str]:
    """Each call in ``tree`` of a function or method called one of ``names`` (given as a dict:
    with at least that many positional arguments), as ``line: name()``."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            least = names.get(name, 0) if isinstance(names, dict) else 0
            if name in names and len(node.args) >= least:
                found.append(f"{node.lineno}: {name}()")
    return sorted(found, key=_line)


def _only_allowed(found: dict[str, list[str]], allowed: dict[str, str], fix: str, gone: str) -> None:
    """Nothing found outside ``allowed`` (else ``fix`` and the places), and every ``allowed``
    module still found (else ``gone``: the allow-list stays true)."""
    offenders = {rel: where for rel, where in found.items() if where and rel not in allowed}
    assert not offenders, f"{fix}: {offenders}"
    stale = sorted(rel for rel in allowed if not found.get(rel))
    assert not stale, f"{gone}: {stale}"


def test_the_policy_is_evaluated_only_in_the_pipelines_policy_step() -> None:
    _only_allowed(
        {rel: calls_named(tree, POLICY_EVALUATORS) for rel, tree in _modules() if not rel.startswith("policy/")},
        POLICY_STEP_MODULES,
        "the command or path policy is evaluated outside the pipeline's POLICY step; give the face's calls to "
        "tools/preset_policy.py (a describe function beside its tools) instead",
        "these modules no longer evaluate the policy; remove them from POLICY_STEP_MODULES")


def test_faces_read_workspace_files_only_through_the_pipeline() -> None:
    _only_allowed(
        {rel: calls_named(tree, FACE_READS) for rel, tree in _modules() if rel.split("/")[0] in FACES},
        FACE_READ_EXCEPTIONS,
        "a face reads a workspace file itself (no policy, no size bound); make it a call of the face's pipeline "
        "(tools/call_path.py)",
        "these face modules no longer read files directly; remove them from the allow-list")


def test_the_call_scanner_sees_policy_calls_and_reads() -> None:
    tree = ast.parse("from codeloop.policy import evaluate_path as ep\nimport codeloop.policy as p\n"
                     "async def f(env, path):\n    p.evaluate_command('ls', None); evaluate_path('a', 'read', None)\n"
                     "    await env.read_bytes('a'); path.read_bytes(); await ops.read_text(env, 'a'); path.read_text('utf-8')\n")
    assert [w.split(": ", 1)[1] for w in calls_named(tree, POLICY_EVALUATORS)] == [
        "evaluate_command()", "evaluate_path()"]
    assert [w.split(": ", 1)[1] for w in calls_named(tree, FACE_READS)] == [
        "read_bytes()", "read_text()"]


def test_the_scanners_see_every_form_of_a_process_start_and_a_workspace_effect() -> None:
    # The two tests above pass on an empty finding; this one proves the scanners find things.
    source = (
        "import subprocess as sp\nfrom os import execvp\nimport asyncio, os\nfrom mcp.client.stdio import stdio_client\n"
        "async def f(env, loop):\n"
        "    os.fork(); os.posix_spawn('x', [], {}); os.system('x')\n"
        "    await asyncio.create_subprocess_exec('x'); await loop.subprocess_shell(None, 'x')\n"
        "    await env.write_file('a', 'b'); await env.delete_file('a'); await env.exec_command('x')\n"
        "    os.kill(1, 9); os.getpid(); env.read_file('a')\n"
    )
    tree = ast.parse(source)
    assert [w.split(": ", 1)[1] for w in process_starts(tree)] == [
        "import subprocess", "from os import execvp", "from mcp.client.stdio import ...",
        "os.fork()", "os.posix_spawn()", "os.system()", ".create_subprocess_exec()", ".subprocess_shell()",
    ]
    assert [w.split(": ", 1)[1] for w in workspace_effects(tree)] == [
        "write_file()", "delete_file()", "exec_command()",
    ]


def test_the_architecture_doc_names_every_exception() -> None:
    doc = (SRC.parents[1] / "docs" / "architecture.md").read_text("utf-8")
    listed = {RUNNER, *PROCESS_EXCEPTIONS, *FACE_EFFECT_EXCEPTIONS, *FACE_READ_EXCEPTIONS, *POLICY_STEP_MODULES}
    missing = sorted(rel for rel in listed if f"`{rel}`" not in doc)
    assert not missing, f"docs/architecture.md does not name these exceptions; add them with their reason: {missing}"


APPROVAL_NAMES = {"Approver", "PendingApproval", "resume_tool_call", "verdicts"}
"""An approval callback, a held call kept outside the pending store, its resume with a verdict the
caller holds, and a face's list of verdicts: each a second record of approvals beside the store."""

APPROVAL_MODULES = {"policy/approval.py", "policy/__init__.py", "tools/pipeline.py", "tools/call_path.py",
                    "tools/__init__.py"}
"""Where those names are defined and built: the seam's types and the pipeline with its one factory."""

APPROVAL_STATE_EXCEPTIONS: dict[str, str] = {}
"""Modules that still keep approval state beside the pending store, each with its reason."""

POLICY_ONLY_NAMES = {"verdicts"}
"""Names the command policy itself may use for its own judgements (policy/ decides, it keeps no answers)."""


def approval_state(tree: ast.Module) -> list[str]:
    """Each use in ``tree`` of an approval callback, a held call or verdicts kept beside the
    pending store, and each ``approver=`` argument, as ``line: what``."""
    found: list[str] = []
    for node in ast.walk(tree):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name in APPROVAL_NAMES:
            found.append(f"{node.lineno}: {name}")  # type: ignore[attr-defined]
        elif isinstance(node, ast.ImportFrom):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name in APPROVAL_NAMES]
        elif isinstance(node, ast.Call):
            found += [f"{node.lineno}: approver=" for k in node.keywords if k.arg == "approver"]
        elif isinstance(node, ast.arg) and node.arg == "approver":
            found.append(f"{node.lineno}: parameter approver")
    return sorted(set(found), key=_line)


def test_no_approval_state_beside_the_pending_store() -> None:
    """Every ask is a pending call in the one store (docs/architecture.md, 'Where a call is
    approved'): no approver is built or passed outside the pipeline's factory, and no face keeps
    held calls or verdicts of its own."""
    found = {rel: approval_state(tree) for rel, tree in _modules() if rel not in APPROVAL_MODULES}
    found = {rel: [w for w in where if not (rel.startswith("policy/") and w.split(": ", 1)[1] in POLICY_ONLY_NAMES)]
             for rel, where in found.items()}
    _only_allowed(
        found, APPROVAL_STATE_EXCEPTIONS,
        "approval state outside the pending store; raise an ask (Decision.ask) and answer it through the "
        "PendingStore the face's pipeline was built with (build_pipeline(pending=...), Pipeline.resume(id))",
        "these modules keep no approval state of their own any more; remove them from APPROVAL_STATE_EXCEPTIONS")


def test_the_approval_scanner_sees_callbacks_held_calls_and_verdicts() -> None:
    tree = ast.parse("from codeloop.policy.approval import Approver, PendingApproval\n"
                     "def f(p, approver: Approver):\n    build(approver=yes); p.resume(PendingApproval(c, d));"
                     " v = run.verdicts[-1]; resume_tool_call(r, p, e, approved=True)\n")
    assert {w.split(": ", 1)[1] for w in approval_state(tree)} == {
        "Approver", "PendingApproval", "import Approver", "import PendingApproval", "parameter approver",
        "approver=", "resume_tool_call", "verdicts"}
