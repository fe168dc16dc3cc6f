"""git commands that run programs through configuration, or destroy work that has no copy.

A git setting can name a program git then runs (``core.fsmonitor``, ``core.pager``,
``gpg.program``, ``difftool.x.cmd``, ``filter.x.clean``, ``alias.x=!sh``, ``include.path`` to
a file holding any of those ...). The list of such keys keeps growing, so the rule is the
other way round: :func:`git_risk` asks about every configuration git is given (``git config``
writes, ``git -c``, ``--config-env``) unless each key is on :data:`DATA_ONLY_KEYS`, settings
that hold data and can never name a program. It also asks about the commands that throw
away work git keeps no copy of (uncommitted changes, untracked files, stashes, branches,
reflogs), read with git's own option rules (options anywhere, unique prefixes of long options).
"""

from __future__ import annotations

DATA_ONLY_KEYS = frozenset({
    "user.name", "user.email", "init.defaultbranch", "core.autocrlf", "core.eol", "core.filemode",
    "core.ignorecase", "core.quotepath", "core.safecrlf", "core.whitespace", "core.abbrev", "color.ui",
    "color.diff", "color.status", "color.branch", "pull.rebase", "pull.ff", "merge.ff", "push.default",
    "push.autosetupremote", "fetch.prune", "rebase.autostash", "rebase.autosquash", "branch.autosetupmerge",
    "status.showuntrackedfiles", "status.short", "status.branch", "log.date", "log.decorate", "diff.renames",
    "diff.algorithm", "diff.noprefix", "diff.mnemonicprefix", "diff.context", "merge.conflictstyle",
    "advice.detachedhead", "advice.addignoredfile", "init.templatedir.unused", "column.ui", "grep.linenumber",
    "commit.verbose", "commit.status", "tag.sort", "branch.sort", "help.autocorrect", "gc.auto",
})
"""git settings (lower case) that are data only: no value of theirs makes git run a program,
read another configuration file or trust another repository."""

_GLOBAL_WITH_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix",
                                "--config-env", "--exec-path", "--list-cmds", "--attr-source"})
_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l",
                           "--show-origin", "--show-scope", "--name-only", "--null", "-z", "--includes",
                           "--no-includes", "--local", "--global", "--system", "--worktree", "--type",
                           "--bool", "--int", "--path", "--default", "--file", "-f", "--blob"})
_CONFIG_SUBCOMMANDS_READ = frozenset({"get", "list"})


def _opt(words: list[str], *names: str) -> bool:
    """True when one of ``names`` (``-f``, ``--force``) is among ``words``: a long option also by
    a unique-enough prefix (``--for``), a short one also inside a cluster (``-fd``)."""
    for w in words:
        if w == "--":
            return False
        for n in names:
            if n.startswith("--"):
                key = w.split("=", 1)[0]
                if key == n or (len(key) >= 4 and key.startswith("--") and n.startswith(key)):
                    return True
            elif w.startswith("-") and not w.startswith("--") and n[1] in w[1:]:
                return True
    return False


def _key_ok(key: str) -> bool:
    return key.lower() in DATA_ONLY_KEYS


def _split_global(args: list[str]) -> tuple[list[tuple[str, str]], str, list[str]] | str:
    """git's global options (name, value), the subcommand and its words; or why not told."""
    opts: list[tuple[str, str]] = []
    i = 0
    while i < len(args):
        w = args[i]
        if not w.startswith("-"):
            return opts, w, args[i + 1:]
        name, eq, value = w.partition("=")
        if name in _GLOBAL_WITH_VALUE:
            if not eq:
                if i + 1 >= len(args):
                    return f"git {w} has no value"
                value = args[i + 1]
                i += 1
            opts.append((name, value))
        elif name.startswith("-c") and len(name) > 2:
            opts.append(("-c", w[2:]))
        elif name.startswith("-C") and len(name) > 2:
            opts.append(("-C", w[2:]))
        else:
            opts.append((name, value))
        i += 1
    return opts, "", []


def git_risk(args: list[str]) -> str:
    """Why ``git ARGS`` needs a human's approval, or ``""`` (see the module docstring)."""
    split = _split_global(args)
    if isinstance(split, str):
        return split
    opts, sub, rest = split
    for name, value in opts:
        if name == "-c" and not _key_ok(value.split("=", 1)[0]):
            return f"git -c {value.split('=', 1)[0]} sets a configuration that may name a program git runs"
        if name == "--config-env":
            return "git --config-env takes a configuration value from the environment"
        if name in ("--exec-path", "--git-dir", "--work-tree"):
            return f"git {name} makes git read programs or configuration from another place"
    if sub == "config":
        return _config_risk(rest)
    return _destructive(sub, rest)


def _config_risk(rest: list[str]) -> str:
    words = [w for w in rest if not w.startswith("-")]
    if _opt(rest, "--edit") or "-e" in rest:
        return "git config --edit runs an editor"
    if words and words[0] in _CONFIG_SUBCOMMANDS_READ:
        return ""
    if words and words[0] in ("set", "unset", "rename-section", "remove-section", "edit"):
        key = words[1] if len(words) > 1 else ""
        return "" if words[0] in ("set", "unset") and _key_ok(key) else \
            f"git config {words[0]} {key} changes a setting that may name a program git runs"
    writes = any(_opt([w], o) for w in rest for o in ("--add", "--replace-all", "--unset", "--unset-all",
                                                        "--rename-section", "--remove-section"))
    options = [w for w in rest if w.startswith("-")]
    reading = all(o.split("=", 1)[0] in _CONFIG_READS for o in options)
    if not writes and reading and (len(words) <= 1 or _opt(rest, "--get-regexp", "--get-urlmatch", "--get")):
        return ""
    key = words[0] if words else ""
    if key and _key_ok(key) and not _opt(rest, "--rename-section", "--remove-section"):
        return ""
    return f"git config {key or '(a section)'} changes a setting that may name a program git runs"


def _destructive(sub: str, rest: list[str]) -> str:
    """Why ``git SUB REST`` throws away work git keeps no copy of, or ``""``."""
    paths = [w for w in rest if not w.startswith("-")]
    why = ""
    # A named file (`git restore src/app.py`) is an ordinary undo of one's own edit; a whole
    # tree (`.`, `:/`, a glob) throws away every uncommitted change at once.
    broad = any(p in (".", "..") or p.endswith("/.") or p.startswith(":") or "*" in p or p.rstrip("/") in (".", "..")
                for p in paths)
    if sub == "checkout" and (broad or _opt(rest, "-f", "--force", "--ours", "--theirs", "--merge")):
        why = "git checkout of the whole tree (or --force) overwrites uncommitted changes"
    elif sub == "restore" and (broad or (_opt(rest, "--staged") and _opt(rest, "--worktree", "-W"))):
        why = "git restore of the whole tree overwrites uncommitted changes"
    elif sub == "switch" and _opt(rest, "--discard-changes", "-f", "--force"):
        why = "git switch --discard-changes throws away uncommitted changes"
    elif sub == "stash" and paths[:1] in (["clear"], ["drop"]):
        why = f"git stash {paths[0]} deletes stashed changes"
    elif sub == "reset" and _opt(rest, "--hard", "--merge", "--keep"):
        why = "git reset --hard throws away uncommitted changes"
    elif sub == "clean" and not _opt(rest, "-n", "--dry-run") and _opt(rest, "-f", "--force", "-x", "-X", "-d"):
        why = "git clean deletes untracked files"
    elif sub == "branch" and (_opt(rest, "-D", "-M", "-C", "-f", "--force")
                              or (_opt(rest, "-d", "--delete") and _opt(rest, "-f", "--force"))):
        why = "git branch -D deletes a branch whose commits may exist nowhere else"
    elif sub in ("reflog", "gc", "prune", "filter-branch", "filter-repo", "update-ref", "replace", "push"):
        why = _history(sub, rest, paths)
    elif sub == "rm" and _opt(rest, "-f", "--force"):
        why = "git rm -f deletes files with uncommitted changes"
    elif sub == "worktree" and paths[:1] == ["remove"] and _opt(rest, "-f", "--force"):
        why = "git worktree remove --force deletes a working tree with its changes"
    elif sub == "tag" and _opt(rest, "-d", "--delete", "-f", "--force"):
        why = "git tag -d deletes a tag"
    return why


def _history(sub: str, rest: list[str], paths: list[str]) -> str:
    if sub == "reflog" and paths[:1] in (["expire"], ["delete"]):
        return f"git reflog {paths[0]} deletes the record of lost commits"
    if sub == "gc" and _opt(rest, "--prune", "--aggressive"):
        return "git gc --prune deletes unreachable commits"
    if sub in ("prune", "filter-branch", "filter-repo", "replace", "push"):
        return f"git {sub} rewrites or deletes history"
    if sub == "update-ref" and _opt(rest, "-d", "--stdin"):
        return "git update-ref -d deletes a reference"
    return ""


def config_writes(args: list[str]) -> bool:
    """True when ``git ARGS`` may write the repository's ``.git/config``."""
    split = _split_global(args)
    if isinstance(split, str):
        return True
    _, sub, rest = split
    if sub == "config":
        return bool(_config_risk(rest)) or not _config_is_read(rest)
    return sub in ("init", "remote", "branch", "checkout", "switch", "submodule", "clone", "worktree",
                   "push", "fetch", "pull", "sparse-checkout", "maintenance", "lfs")


def _config_is_read(rest: list[str]) -> bool:
    words = [w for w in rest if not w.startswith("-")]
    if words and words[0] in _CONFIG_SUBCOMMANDS_READ:
        return True
    options = [w for w in rest if w.startswith("-")]
    return all(o.split("=", 1)[0] in _CONFIG_READS for o in options) and len(words) <= 1
