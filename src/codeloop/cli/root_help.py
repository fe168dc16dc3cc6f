"""The text of ``codeloop --help`` at 80 columns or more, printed without importing typer.

Generated from the Typer app; ``tests/cli/test_root_help.py`` fails when it drifts and prints
the new text to paste here.
"""

ROOT_HELP = """\
Usage: codeloop [OPTIONS] COMMAND [ARGS]...

  codeloop: a coding-agent engine. Example: codeloop run "add a --verbose flag
  to cli.py"

Options:
  --help  Show this message and exit.

Commands:
  version      Print the codeloop version.
  apply-patch  Apply a v4a patch: every file of it, or none.
  tool         Run one tool through the full pipeline, as a model's call...
  run          Run the coding agent on TASK in a workspace, or chat with...
  rewind       Restore the files and conversation of a session to the end...
  undo         Take back the last turn of a session that changed files.
  redo         Take back the last rewind or undo of a session.
  trust        Show the settings of DIR/.codeloop/ that need trust...
  relay        Drive a workspace from any chat model by copy and paste:...
  spaces       JSON operations/events runtime.
  index        Local code index: full-text search, symbols, import graph.
  codali       Context broker for stateless agents (AGENT_REQUEST v1 →...
  sessions     Recorded sessions of 'codeloop run'.
  worktrees    Git worktrees of codeloop run --worktree: list, merge,...
  approvals    Tool calls waiting for an answer, from any shell of this...
"""
