"""Write commands as inbox text: the inverse of :func:`codeloop.relay.parser.parse_inbox`.

Used by tests (round trips), by scripted replies, and by anyone generating inbox files.
``parse_inbox(serialize_commands(cmds)) == cmds`` for every list it accepts; it raises
``ValueError`` for what the protocol cannot express (a ``"`` or newline in a path, a body
line that is the command's own closing tag, a file body not ending in a newline).
"""

from __future__ import annotations

from collections.abc import Iterable

from codeloop.relay import commands as c


def _path(path: str) -> str:
    if not path.strip() or '"' in path or "\n" in path:
        raise ValueError(f"path {path!r} cannot be written in a tag (empty, or holds a quote or newline)")
    return f'path="{path}"'


def _body(name: str, body: str) -> str:
    closing = f"[/{name}]"
    if any(line.strip() == closing for line in body.split("\n")):
        raise ValueError(f"a {name} body cannot hold a line that is its own closing tag {closing}")
    return body


def _file_body(name: str, content: str) -> str:
    if content and not content.endswith("\n"):
        raise ValueError(f"a {name} body always ends with a newline; {content[-20:]!r} does not")
    return _body(name, content)


def _text_body(name: str, text: str) -> str:
    if text.endswith("\r"):
        raise ValueError(f"a {name} text cannot end with a carriage return")
    if name == "RUN_COMMAND" and not text.strip():
        raise ValueError("a RUN_COMMAND needs a non-empty command")
    return _body(name, text + "\n") if text else ""


def serialize_command(cmd: c.RelayCommand) -> str:
    """One command as a block, ending with a newline."""
    match cmd:
        case c.CreateFile():
            return f"[CREATE_FILE {_path(cmd.path)}]\n{_file_body(cmd.name, cmd.content)}[/CREATE_FILE]\n"
        case c.EditFile():
            head = f'[EDIT_FILE {_path(cmd.path)} start_line="{cmd.start_line}" end_line="{cmd.end_line}"]'
            return f"{head}\n{_file_body(cmd.name, cmd.content)}[/EDIT_FILE]\n"
        case c.DeleteFile():
            return f"[DELETE_FILE {_path(cmd.path)}]\n"
        case c.ReadFile():
            return f"[READ_FILE {_path(cmd.path)}]\n"
        case c.RunCommand():
            return f"[RUN_COMMAND]\n{_text_body(cmd.name, cmd.command)}[/RUN_COMMAND]\n"
        case c.Message():
            return f"[MESSAGE]\n{_text_body(cmd.name, cmd.text)}[/MESSAGE]\n"
        case c.Done():
            return f"[DONE]\n{_text_body(cmd.name, cmd.summary)}[/DONE]\n"
        case c.ParseError():
            raise ValueError(f"a parse error ({cmd.message}) is not a command and cannot be written")


def serialize_commands(commands: Iterable[c.RelayCommand]) -> str:
    """The commands as one inbox text, blocks one after the other."""
    return "".join(serialize_command(cmd) for cmd in commands)
