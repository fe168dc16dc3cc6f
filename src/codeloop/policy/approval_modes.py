"""Approval modes of ``codeloop run --approval`` and the per-project "always" answers (issue 9).

:func:`approval_policy` builds the POLICY step of the tool pipeline
(:class:`~codeloop.policy.approval.ToolPolicy`); it decides and never prompts: allow, deny,
or ask, an ask naming what an "always" answer would remember (``Decision.remember_as``). The
pipeline turns the ask into a pending call that the terminal prompt, ``codeloop approvals`` or
any other surface answers (:mod:`codeloop.policy.pending`, issue 34). Modes:

- ``never-ask``: every call runs (a trusted setup, or a sandbox does the protecting);
- ``on-risk`` (default): shell lines run without asking when every command in them is
  read-only (:func:`codeloop.policy.shell.is_read_only`: ``ls``, ``cat``, ``grep``,
  ``git status``... with no writing redirection) or starts with a remembered prefix; file
  tools run (they name the paths they touch, and the resolver keeps those in the workspace);
  a call that may do anything anywhere (MCP tools, ``job_input``) asks unless remembered;
- ``always-ask``: every call but the read-only ones asks, unless remembered.

What a call may do is its tool's declaration (``codeloop.tools.effects``), which the pipeline
puts on the :class:`~codeloop.policy.approval.ToolCallRequest`: ``read_only`` (only the
``read`` effect), ``command`` (the shell line it runs), ``paths`` (None: unknown). No tool is
known here by its name.

The answer ``always`` (:func:`remembering`) is stored in ``.codeloop/approvals.toml`` of the workspace as a
command prefix (``git commit``) or an MCP tool name, and applies to later sessions. That
file comes with the repository, so its prefixes apply only when the user trusted its exact
content (:mod:`codeloop.policy.trust`; saving an answer trusts what was saved).

In every mode, a call that would change ``.codeloop/`` (a path argument, a patch or a shell
line naming it) asks, and its answer is never remembered: the agent must not rewrite its
own configuration.

Without a sandbox that protects them (``--sandbox off``; issue 32), the same holds for
every path the host runs or reads settings from: ``.git`` at any depth, ``.envrc``,
``.vscode``, ``.idea``, ``.devcontainer``, and a shell line that writes git's
configuration (``git config`` but for its reading forms); under ``never-ask``, where nobody
is asked, such a call is refused. Inside ``read-only`` or ``workspace-write`` the sandbox
keeps these read-only itself (:mod:`codeloop.environments.host_guard`).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from codeloop.environments.errors import WorkspaceError
from codeloop.environments.owned_files import read_owned_file
from codeloop.environments.resolver import resolve_workspace_path
from codeloop.environments.safe_open import atomic_write_beneath
from codeloop.policy.approval import ToolCallRequest, ToolPolicy
from codeloop.policy.model import Decision
from codeloop.policy.pending import PendingCall
from codeloop.policy.shell import is_read_only
from codeloop.policy.shell_parse import ParsedCommand, ShellParseError, split_commands
from codeloop.policy.trust import is_trusted, trust, untrusted_warning

if TYPE_CHECKING:
    from codeloop.environments.base import ExecutionEnvironment

APPROVAL_MODES = ("never-ask", "on-risk", "always-ask")
"""Values of ``--approval`` and of ``approval`` in config.toml."""

MAX_APPROVALS_BYTES = 1024 * 1024
"""Largest ``approvals.toml`` read (a bigger one is refused unread)."""


class ApprovalsFileError(ValueError):
    """``.codeloop/approvals.toml`` is malformed; the message names the file and the fix."""


_SUBCOMMAND_PROGRAMS = frozenset({
    "git", "npm", "pnpm", "yarn", "cargo", "go", "docker", "podman", "kubectl", "pip", "pip3", "uv",
    "poetry", "make", "dotnet", "gradle", "mvn", "bundle", "gem", "brew", "apt", "apt-get", "systemctl",
})
"""Programs whose second word selects what they do (``git commit`` vs ``git push``)."""


def command_prefix(cmd: ParsedCommand) -> str:
    """The prefix an ``always`` answer remembers: the program, plus its subcommand for
    programs that have them (``git commit``, ``npm test``)."""
    words = list(cmd.argv[:1])
    if cmd.name in _SUBCOMMAND_PROGRAMS and len(cmd.argv) > 1 and not cmd.argv[1].startswith("-"):
        words.append(cmd.argv[1])
    return " ".join(words)


def _toml_string(value: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, except DEL which TOML wants escaped."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def parse_approvals(raw: bytes, path: Path) -> list[str]:
    """The prefixes of an ``approvals.toml``'s content; ApprovalsFileError naming ``path``."""
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ApprovalsFileError(f"{path}: invalid TOML: {exc}; fix it or delete the file "
                                 "(it only holds remembered approvals)") from None
    allowed = data.get("allowed_prefixes", [])
    unknown = set(data) - {"allowed_prefixes"}
    if unknown or not (isinstance(allowed, list) and all(isinstance(p, str) for p in allowed)):
        raise ApprovalsFileError(f"{path}: expected only allowed_prefixes = [\"git commit\", ...]; "
                                 "fix it or delete the file")
    return [p for p in allowed if p.split()]


class ApprovalStore:
    """The remembered answers of one project: ``.codeloop/approvals.toml`` in the workspace."""

    def __init__(self, workspace: Path | str) -> None:
        self.workspace = Path(workspace).resolve()
        self.named = self.workspace / ".codeloop" / "approvals.toml"
        """The file as named: what trust is keyed on (never where a link leads)."""
        try:
            self.path = resolve_workspace_path(self.workspace, ".codeloop/approvals.toml")
        except WorkspaceError:
            self.path = self.named  # a link leading out: the read below refuses it
        self.prefixes: list[str] = []
        """Allowed command prefixes and MCP tool names."""
        self.ignored: list[str] = []
        """Prefixes of an untrusted file: kept in the file, not applied."""
        self.warning: str | None = None
        """Why ``ignored`` is not empty, for the user."""
        self._load()

    def _load(self) -> None:
        try:
            raw = read_owned_file(self.named, max_bytes=MAX_APPROVALS_BYTES, within=self.workspace)
        except FileNotFoundError:
            return
        except WorkspaceError as exc:
            raise ApprovalsFileError(f"{exc}; replace it with a regular file (or delete it)") from None
        except OSError as exc:
            raise ApprovalsFileError(f"{self.named}: cannot read: {exc.strerror}; fix its permissions") from None
        prefixes = parse_approvals(raw, self.path)
        if prefixes and not is_trusted(self.named, raw, self.workspace):
            self.ignored = prefixes
            self.warning = untrusted_warning(self.path, "the pre-approved commands " + ", ".join(prefixes),
                                             self.workspace)
            return
        self.prefixes = prefixes

    def matches(self, argv: tuple[str, ...]) -> bool:
        """True when ``argv`` starts with a remembered prefix (whole words)."""
        return any(tuple(p.split()) == argv[: len(p.split())] for p in self.prefixes)

    def is_allowed(self, command: str) -> bool:
        """True when every command of the shell line starts with a remembered prefix."""
        commands = _parsed(command) or []
        return bool(commands) and all(not c.dynamic and self.matches(c.argv) for c in commands)

    def is_tool_allowed(self, name: str) -> bool:
        """True when the tool name itself was remembered (MCP tools)."""
        return name in self.prefixes

    def remember(self, prefix: str) -> None:
        """Add ``prefix`` and save the file atomically."""
        prefix = " ".join(prefix.split())
        if not prefix or prefix in self.prefixes:
            return
        self.prefixes.append(prefix)  # kept for this session even if saving fails below
        body = ",\n".join(f"  {_toml_string(p)}" for p in self.ignored + self.prefixes)
        content = ("# Commands 'codeloop run' may run without asking in this project (answers 'always').\n"
                   f"allowed_prefixes = [\n{body},\n]\n").encode()
        # The agent may have replaced .codeloop with a link since the path was resolved:
        # write without following links, beneath the workspace.
        atomic_write_beneath(self.workspace, self.path, content, ".codeloop/approvals.toml")
        if not self.ignored:  # the user's own answers; untrusted ones in the file still need 'codeloop trust'
            trust(self.named, content, self.workspace)


@dataclass(frozen=True)
class ApprovalRequest:
    """Why a call asks (what :func:`approval_policy` puts in its ``Decision.ask``)."""

    tool_name: str
    """The tool called."""
    summary: str
    """The command line, or the tool call in short."""
    reason: str
    """Why approval is needed."""
    remember_as: tuple[str, ...]
    """What ``always`` will remember (command prefixes or the tool name)."""


def _parsed(line: str) -> list[ParsedCommand] | None:
    try:
        return split_commands(line)
    except ShellParseError:
        return None


def is_read_only_line(line: str) -> bool:
    """True when every command of ``line`` only reads (False when it cannot be parsed)."""
    commands = _parsed(line)
    return commands is not None and all(is_read_only(c) for c in commands)


_CODELOOP_DIR = re.compile(r"(?<![\w.-])\.codeloop(?![\w.-])", re.IGNORECASE)
_HOST_RUN_PATH = re.compile(r"(?<![\w.-])\.(?:git|envrc|vscode|idea|devcontainer|codeloop)(?![\w.-])",
                            re.IGNORECASE)
"""A path component the host runs or reads settings from (``.git/config``, ``sub/.git``)."""
_GIT_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l",
                               "--show-origin", "--show-scope", "--name-only", "--get-color", "--get-colorbool"})
"""Options of ``git config`` that only read."""
_GIT_CONFIG_WRITES = frozenset({"--unset", "--unset-all", "--add", "--replace-all", "--rename-section",
                                "--remove-section", "--edit", "-e"})


def _names_codeloop_dir(value: object) -> bool:
    """True when a string anywhere in ``value`` names ``.codeloop`` as a path component."""
    if isinstance(value, str):
        return bool(_CODELOOP_DIR.search(value))
    if isinstance(value, dict):
        return any(_names_codeloop_dir(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_names_codeloop_dir(v) for v in value)
    return False


def _names_host_run_path(value: object) -> bool:
    """True when a string anywhere in ``value`` names a protected path component."""
    if isinstance(value, str):
        return bool(_HOST_RUN_PATH.search(value))
    if isinstance(value, dict):
        return any(_names_host_run_path(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_names_host_run_path(v) for v in value)
    return False


def _writes_git_config(line: str) -> bool:
    """True when a command of ``line`` is ``git config`` in a form that may write (or the
    line cannot be analysed)."""
    commands = _parsed(line)
    if commands is None:
        return True
    for command in commands:
        argv = list(command.argv)
        if command.name != "git" or "config" not in argv:
            continue
        rest = argv[argv.index("config") + 1:]
        if _GIT_CONFIG_WRITES.intersection(rest) or rest[:1] in (["set"], ["unset"], ["edit"]):
            return True
        reads = _GIT_CONFIG_READS.intersection(rest) or rest[:1] in (["list"], ["get"])
        if not reads and len([a for a in rest if not a.startswith("-")]) >= 2:
            return True
    return False


def writes_host_run_path(call: ToolCallRequest) -> bool:
    """True when ``call`` may write what the host runs (module docstring): a tool that is not
    read-only naming a protected path, or a shell line that is not read-only naming one or
    writing git's configuration."""
    if call.read_only:
        return False
    if call.command is not None:
        line = call.command
        if _writes_git_config(line):
            return True
        return _names_host_run_path(line) and not is_read_only_line(line)
    return _names_host_run_path(call.arguments)


def approval_policy(mode: str, store: ApprovalStore) -> ToolPolicy:
    """The ToolPolicy of an approval mode; ValueError for an unknown mode. It never prompts:
    an ask is ``Decision.ask(reason, "approval.<mode>", remember_as)``."""
    if mode not in APPROVAL_MODES:
        raise ValueError(f"unknown approval mode {mode!r}; use one of {', '.join(APPROVAL_MODES)}")

    def needs(call: ToolCallRequest) -> ApprovalRequest | None:
        if call.read_only:
            return None
        if _names_codeloop_dir(call.arguments) and not (
                call.command is not None and is_read_only_line(call.command)):
            args = json.dumps(call.arguments, ensure_ascii=False)
            return ApprovalRequest(call.name, f"{call.name} {args[:200]}",
                                   "it may change .codeloop/, the project's codeloop configuration", ())
        if mode == "never-ask":
            return None
        if call.command is not None:
            line = call.command
            if store.is_allowed(line):
                return None
            try:
                commands = split_commands(line)
            except ShellParseError as exc:
                return ApprovalRequest(call.name, line, f"the line cannot be analysed ({exc})", ())
            risky = [c for c in commands if not is_read_only(c) and not store.matches(c.argv)]
            if mode == "on-risk" and not risky:
                return None
            judged = risky or commands
            names = ", ".join(dict.fromkeys(c.name or c.text for c in judged))
            return ApprovalRequest(call.name, line, f"runs {names}" + (" (may change files)" if risky else ""),
                                   tuple(dict.fromkeys(command_prefix(c) for c in judged if not c.dynamic)))
        if store.is_tool_allowed(call.name) or (mode == "on-risk" and call.paths is not None):
            return None
        args = json.dumps(call.arguments, ensure_ascii=False)
        return ApprovalRequest(call.name, f"{call.name} {args[:200]}", "tool call", (call.name,))

    rule = f"approval.{mode}"

    async def policy(call: ToolCallRequest, env: ExecutionEnvironment) -> Decision:
        if not getattr(env, "protects_host_files", False) and writes_host_run_path(call):
            why = ("it may change what the host runs (git's configuration or hooks, .envrc, editor or "
                   ".codeloop settings) and no sandbox protects them")
            if mode == "never-ask":
                return Decision.deny(f"refused: {why}; with --approval never-ask nobody can be asked. Run it "
                                     "in a sandbox (--sandbox workspace-write) or make this change yourself")
            return Decision.ask(why, rule)
        request = needs(call)
        if request is None:
            return Decision.allow()
        return Decision.ask(request.reason, rule, request.remember_as)

    return policy


def remembering(store: ApprovalStore, warn: Callable[[str], None] | None = None) -> Callable[[PendingCall], None]:
    """What the pipeline calls when a pending call was approved "always": each of its
    ``remember_as`` goes to ``store`` (``approvals.toml``). ``warn`` hears when one could not
    be saved (it still holds for this session)."""

    def remember(entry: PendingCall) -> None:
        for prefix in entry.remember_as:
            try:
                store.remember(prefix)
            except (WorkspaceError, OSError) as exc:
                if warn is not None:
                    warn(f"could not save the approval of {prefix!r} to {store.path} ({exc}); "
                         "it holds for this session only")

    return remember
