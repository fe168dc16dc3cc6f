"""What a call to a tool that does not exist should have been (small models invent tools).

A 1.5B model asked to delete a file calls ``delete_file``; asked to run a script, ``run`` or
``execute_command``. "Unknown tool" plus the list of tools is often not enough for it to find
the way, so the error names the equivalent call with the model's own arguments filled in.
Here the call is only suggested; a small-model session runs a complete one (no placeholder
left: :func:`meant_call`) as the call the model meant (``codeloop.agent.reply_rescue``),
through the pipeline, so policy and approval apply as usual.
"""

from __future__ import annotations

import difflib
import re
import shlex
from collections.abc import Collection, Mapping
from typing import Any

from codeloop.tools.edit import EDIT_FILE
from codeloop.tools.files import LIST_DIR, READ_FILE, WRITE_FILE
from codeloop.tools.search import GLOB, GREP
from codeloop.tools.shell import SHELL

_DELETE = frozenset({"delete_file", "remove_file", "delete", "remove", "rm", "unlink", "delete_files",
                     "remove_files", "rm_file", "deletefile", "removefile"})
_RUN = frozenset({"run", "execute", "exec", "bash", "sh", "terminal", "run_command", "execute_command",
                  "run_shell", "shell_command", "run_bash", "command", "run_script", "execute_script",
                  "run_python", "python", "cmd"})
_WRITE = frozenset({"create_file", "save_file", "write", "new_file", "write_to_file", "create", "writefile"})
_READ = frozenset({"open_file", "view_file", "cat", "read", "view", "show_file", "get_file", "readfile"})
_EDIT = frozenset({"replace", "str_replace", "replace_in_file", "modify_file", "update_file", "edit",
                   "str_replace_editor", "patch_file"})
_LIST = frozenset({"list_files", "ls", "list_directory", "list", "dir", LIST_DIR})
_SEARCH = frozenset({"search", "find", "search_files", "grep_search", "find_in_files", "search_code"})

_PATH_KEYS = ("file_path", "path", "filename", "file", "filepath", "target", "name")
_COMMAND_KEYS = ("command", "cmd", "script", "code", "args")


def _first(arguments: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return " ".join(value)
    return None


def equivalent_call(name: str, arguments: Mapping[str, Any] | None,
                    schemas: Mapping[str, Mapping[str, Any]]) -> tuple[str, dict[str, Any]] | None:
    """The available tool and arguments that do what a call to the unknown ``name`` meant,
    or None when there is no clear equivalent. ``schemas`` maps each available tool to its
    JSON Schema; a suggestion is made only when its parameters are that tool's."""
    found = _equivalent(name, arguments or {}, schemas)
    if found is None:
        return None
    tool, args = found
    props = schemas[tool].get("properties", {}) or {}
    return found if all(k in props for k in args) else None


PLACEHOLDERS = frozenset({"PATH", "COMMAND", "...", "PATTERN", "rm -- PATH"})
"""Values :func:`equivalent_call` fills in where the model's call said nothing."""


def meant_call(name: str, arguments: Mapping[str, Any] | None,
               schemas: Mapping[str, Mapping[str, Any]]) -> tuple[str, dict[str, Any]] | None:
    """:func:`equivalent_call` when every argument of it came from the model's call (no
    placeholder), else None: the call the model meant, complete enough to run."""
    found = equivalent_call(name, arguments, schemas)
    if found is None or any(isinstance(v, str) and v in PLACEHOLDERS for v in found[1].values()):
        return None
    return found


def _equivalent(name: str, args: Mapping[str, Any],
                available: Collection[str]) -> tuple[str, dict[str, Any]] | None:
    key = name.strip().lower().replace("-", "_").replace(" ", "_")
    path = _first(args, _PATH_KEYS)
    if key in _DELETE and SHELL in available:
        return SHELL, {"command": f"rm -- {shlex.quote(path)}" if path else "rm -- PATH"}
    if key in _RUN and SHELL in available:
        command = _first(args, _COMMAND_KEYS)
        if key in ("python", "run_python") and command and "\n" not in command:
            command = f"python3 -c {shlex.quote(command)}"
        return SHELL, {"command": command or "COMMAND"}
    if key in _WRITE and WRITE_FILE in available:
        return WRITE_FILE, {"file_path": path or "PATH", "content": args.get("content", args.get("text", "..."))}
    if key in _READ and READ_FILE in available:
        return READ_FILE, {"file_path": path or "PATH"}
    if key in _EDIT and EDIT_FILE in available:
        return EDIT_FILE, {"file_path": path or "PATH", "old_string": args.get("old_string", args.get("old", "...")),
                             "new_string": args.get("new_string", args.get("new", "..."))}
    if key in _LIST:
        directory = path or _first(args, ("directory", "dir")) or "."
        if LIST_DIR in available:
            return LIST_DIR, {"path": directory}
        if GLOB in available:
            return GLOB, {"pattern": "*", "path": directory}
    if key in _SEARCH and GREP in available:
        return GREP, {"pattern": _first(args, ("pattern", "query", "text", "regex")) or "PATTERN"}
    return None


_WISHES: dict[str, frozenset[str]] = {
    tool: frozenset(words.split()) for tool, words in {
        EDIT_FILE: "edit change modify update replace rename fix refactor insert add append patch set implement "
                     "complete correct function method class line lines code",
        WRITE_FILE: "write create save new make generate overwrite output",
        READ_FILE: "read open view show cat get inspect look display content contents",
        SHELL: "run execute exec test tests install build compile delete remove rm move mv copy cp mkdir python "
                 "pip pytest bash sh command script",
        GREP: "search find grep locate lookup where usages references",
        GLOB: "list ls files glob dir directory tree",
    }.items()
}
"""Words of an invented tool name (``rename_symbol``) → the tool that does what they say."""


def closest_tools(name: str, available: Collection[str], most: int = 2) -> list[str]:
    """The available tools closest to what an invented tool ``name`` says it does, best first:
    by the words of the name (``rename_symbol``: edit_file), else by spelling."""
    words = [w.lower() for w in re.split(r"[_\-\s.]+|(?<=[a-z])(?=[A-Z])", name) if w]
    found: list[str] = []
    for word in words:
        for tool, wished in _WISHES.items():
            if word in wished and tool in available and tool not in found:
                found.append(tool)
    if not found:
        found = difflib.get_close_matches(name.lower(), list(available), n=most, cutoff=0.5)
    return found[:most]
