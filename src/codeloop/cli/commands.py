"""Custom commands (issue 21): ``.codeloop/commands/NAME.md`` and
``~/.config/codeloop/commands/NAME.md`` become ``/NAME args`` in a chat and
``codeloop run /NAME args``.

A command is a prompt template: an optional front matter block (``---`` lines around
``key: value`` lines: ``description``, ``allowed-tools``, ``model``), then the body.
``$ARGUMENTS`` in the body becomes the arguments (appended on a line of their own when the
body does not say where); ``@path`` becomes the file's content, read through the workspace
path resolver (no escape from the workspace, symlinks included); ``@shot.png`` attaches the
image (:mod:`codeloop.cli.images`). Commands only expand text and run nothing, so project
commands need no trust (their ``model`` follows the project config's ``model``, which needs
none either). ``allowed-tools`` is enforced by ``cli/run.py`` in the tool pipeline's POLICY.
A project command replaces a user command of the same name.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

from codeloop.cli.images import (
    MENTION,
    ImageError,
    image_type,
    load_image,
    mentioned_images,
    vision_problem,
    workspace_file,
)
from codeloop.cli.model_choice import ModelChoice
from codeloop.environments.errors import FileTooLargeError, WorkspaceError
from codeloop.environments.owned_files import read_owned_file
from codeloop.llm.types import ImageData

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
BUILT_IN = ("plan", "go", "help", "exit", "quit")
"""Chat commands a custom command cannot replace."""
KEYS = ("description", "allowed-tools", "model")
MAX_INCLUDED_BYTES = 256 * 1024
"""Largest file an ``@path`` includes."""
MAX_COMMAND_BYTES = 1024 * 1024
"""Largest command file read (a bigger one is refused unread)."""


class CommandError(ValueError):
    """A command file or its use is wrong: the message says where and how to fix it."""


@dataclass(frozen=True)
class CustomCommand:
    """One command file, parsed."""

    name: str
    path: Path
    body: str
    description: str = ""
    allowed_tools: tuple[str, ...] | None = None
    """None: every tool."""
    model: str | None = None


def command_dirs(root: Path) -> list[Path]:
    """Where commands live, lowest precedence first: the user's, then the project's."""
    from codeloop.policy.trust import user_config_dir

    return [user_config_dir() / "commands", root / ".codeloop" / "commands"]


def load_commands(root: Path) -> dict[str, CustomCommand]:
    """Every command of the workspace ``root`` by name; CommandError for a bad file."""
    found: dict[str, CustomCommand] = {}
    user, project = command_dirs(root)
    for directory, within in ((user, None), (project, root)):
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.md")):
            command = parse_command(path, within)
            found[command.name] = command
    return found


def parse_command(path: Path, within: Path | None = None) -> CustomCommand:
    """The command in ``path``; CommandError naming the file and line of a mistake. A
    project's command (``within`` its repository) is read only when it is a regular file
    inside the repository: a link out of it would send a host file to the model."""
    name = path.stem
    if not NAME.fullmatch(name):
        raise CommandError(f"{path}: a command name takes letters, digits, - and _ (starting with a letter "
                           "or digit): rename the file")
    if name in BUILT_IN:
        raise CommandError(f"{path}: /{name} is a built-in chat command: rename the file")
    try:
        text = read_owned_file(path, max_bytes=MAX_COMMAND_BYTES, within=within).decode("utf-8")
    except UnicodeDecodeError:
        raise CommandError(f"{path}: not UTF-8 text; save it as UTF-8") from None
    except WorkspaceError as exc:
        raise CommandError(f"{exc}; make the command a regular file in {path.parent}") from None
    except OSError as exc:
        raise CommandError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    lines = text.splitlines()
    fields: dict[str, str] = {}
    body = text
    if lines and lines[0].strip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        if end is None:
            raise CommandError(f"{path}:1: the front matter starting here has no closing '---' line: add one "
                               "after the last 'key: value' line")
        for number in range(2, end + 1):
            parse_field(path, number, lines[number - 1], fields)
        body = "\n".join(lines[end + 1:])
    tools = fields.get("allowed-tools")
    return CustomCommand(name, path, body.strip("\n"), fields.get("description", ""),
                         None if tools is None else split_tools(path, tools), fields.get("model"))


def parse_field(path: Path, number: int, line: str, fields: dict[str, str]) -> None:
    """One front matter line into ``fields``; CommandError at ``path:number``."""
    where = f"{path}:{number}"
    if not line.strip() or line.lstrip().startswith("#"):
        return
    key, colon, value = line.partition(":")
    key, value = key.strip(), value.strip()
    if not colon:
        raise CommandError(f"{where}: expected 'key: value', got {line.strip()!r}; keys: {', '.join(KEYS)}")
    if key not in KEYS:
        close = difflib.get_close_matches(key, KEYS, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"use one of {', '.join(KEYS)}"
        raise CommandError(f"{where}: unknown key {key!r}: {hint}")
    if key in fields:
        raise CommandError(f"{where}: {key!r} is set twice: keep one")
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    if not value:
        raise CommandError(f"{where}: {key!r} has no value: write '{key}: VALUE' or delete the line")
    fields[key] = value


def split_tools(path: Path, value: str) -> tuple[str, ...]:
    """``read_file, grep`` or ``[read_file, grep]`` as tool names."""
    names = tuple(n.strip().strip("\"'") for n in value.strip("[]").split(","))
    bad = [n for n in names if not NAME.fullmatch(n)]
    if bad or not names:
        raise CommandError(f"{path}: allowed-tools {value!r} is not a list of tool names: "
                           "write e.g. 'allowed-tools: read_file, grep, glob'")
    return names


def command_call(text: str, root: Path) -> tuple[CustomCommand, str] | None:
    """The command and arguments of ``/NAME args``; None for other text (a path such as
    ``/tmp/x``, or ``/tmp`` when no command is named so: the task is about that directory);
    CommandError for an unknown ``/NAME``, listing the known ones."""
    word, _, args = text.strip().partition(" ")
    if not (word.startswith("/") and NAME.fullmatch(word[1:])):
        return None
    commands = load_commands(root)
    if word[1:] not in commands and Path(word).exists():
        return None
    return find_command(commands, word[1:]), args.strip()


def find_command(commands: dict[str, CustomCommand], name: str) -> CustomCommand:
    """The command ``name``; CommandError listing the known ones."""
    if name in commands:
        return commands[name]
    known = ", ".join(f"/{n}" for n in sorted(commands)) or "none yet"
    raise CommandError(f"unknown command /{name} (custom commands: {known}); add one as "
                       f".codeloop/commands/{name}.md, or /help lists the commands")


@dataclass(frozen=True)
class Prompt:
    """What one typed message or task sends."""

    text: str
    images: tuple[ImageData, ...] = ()
    command: CustomCommand | None = None
    """The custom command it came from (its ``allowed_tools`` hold for this prompt)."""


def prepare(text: str, root: Path, choice: ModelChoice) -> Prompt:
    """``text`` as the prompt to send: ``/NAME args`` expanded, ``@shot.png`` attached;
    CommandError or ImageError when it cannot be sent."""
    call = command_call(text, root)
    if call is None:
        return Prompt(text, mentioned_images(text, root, choice))
    command, args = call
    expanded, images = expand(command, args, root, choice)
    return Prompt(expanded, images, command)


def expand(command: CustomCommand, args: str, root: Path,
           choice: ModelChoice) -> tuple[str, tuple[ImageData, ...]]:
    """The prompt of ``/NAME args`` and the images it attaches; CommandError (file missing,
    outside the workspace, binary, too big, an image the model cannot take)."""
    body = command.body
    text = body.replace("$ARGUMENTS", args) if "$ARGUMENTS" in body else "\n\n".join(p for p in (body, args) if p)
    images: list[ImageData] = []

    def include(match: re.Match[str]) -> str:
        name = match.group(1)
        path = workspace_file(root, name)
        if image_type(name):
            problem = vision_problem(choice)
            if problem is not None:
                raise ImageError(f"@{name}: {problem}")
            images.append(load_image(path, f"@{name}", choice.provider, within=root))
            return match.group(0)
        return match.group(0).replace(f"@{name}", included(path, name, root), 1)

    try:
        return MENTION.sub(include, text), tuple(images)
    except ImageError as exc:
        raise CommandError(f"/{command.name} ({command.path}): {exc}") from None


def included(path: Path, name: str, root: Path) -> str:
    """The text ``@name`` stands for: the file's content, fenced. Only a regular file inside
    the workspace ``root`` is read (a FIFO would block, a device never end)."""
    if path.is_dir():
        raise ImageError(f"@{name} is a directory: name a file")
    try:
        data = read_owned_file(path, max_bytes=MAX_INCLUDED_BYTES, within=root, shown=f"@{name}")
    except FileTooLargeError as exc:
        raise ImageError(f"@{name} is {exc.size} bytes, over the {MAX_INCLUDED_BYTES}-byte limit of @ "
                         "includes: name a smaller file, or let the agent read it") from None
    except WorkspaceError as exc:
        raise ImageError(f"{exc}; name a regular file") from None
    except OSError as exc:
        raise ImageError(f"cannot read @{name}: {exc.strerror or exc}") from None
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ImageError(f"@{name} is not UTF-8 text: @ includes text files and png/jpg/gif/webp "
                         "images") from None
    return f"{name}:\n```\n{content.rstrip()}\n```"


def help_text(commands: dict[str, CustomCommand]) -> str:
    """``/help``: the built-in chat commands and the custom ones with their descriptions."""
    lines = ["/NAME ARGS  a custom command (below)",
             "/plan  plan mode: the agent only reads and answers with a plan",
             "/go [TEXT]  run the plan (or TEXT, your edited plan) with the normal tools",
             "/help  this list", "/exit  quit"]
    if commands:
        lines.append("custom commands:")
        lines += [f"/{c.name}  {c.description or '(no description)'}  [{c.path}]" for c in commands.values()]
    else:
        lines.append("custom commands: none (add .codeloop/commands/NAME.md)")
    return "\n".join(lines)
