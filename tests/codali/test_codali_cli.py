"""``codeloop codali answer`` as other tools script it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPLY = """I need the landing page.

```
AGENT_REQUEST v1
role: architect
request_id: 123
needs:
  - type: docdex.search
    query: "landing page"
    limit: 5
  - type: file.read
    path: "src/public/index.html"
context:
  summary: "Need root page HTML to finish plan"
```
"""


def run(args: list[str], stdin: str, index_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CODELOOP_INDEX_DIR": str(index_dir)}
    return subprocess.run([sys.executable, "-m", "codeloop.cli.main", "codali", *args], input=stdin,
                          capture_output=True, text=True, env=env, timeout=120)


def test_answer_from_stdin_prints_one_response(repo: Path, _index_dir: Path) -> None:
    result = run(["answer", "--repo", str(repo), "-"], REPLY, _index_dir)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("CODALI_RESPONSE v1\nrequest_id: \"123\"\nresults:\n")
    assert "    content: |\n      <!doctype html>\n" in result.stdout
    assert result.stdout.count("CODALI_RESPONSE v1") == 1


def test_answer_from_file_as_json(repo: Path, _index_dir: Path, tmp_path: Path) -> None:
    reply = tmp_path / "reply.txt"
    reply.write_text(REPLY)
    result = run(["answer", "--repo", str(repo), "--json", str(reply)], "", _index_dir)
    data = json.loads(result.stdout)
    assert [r["type"] for r in data["results"]] == ["docdex.search", "file.read"]
    assert data["results"][0]["hits"][0]["path"] == "src/public/index.html"
    assert data["meta"]["repo_root"] == str(repo.resolve())


def test_malformed_request_is_one_line_error_with_line_and_field(repo: Path, _index_dir: Path) -> None:
    result = run(["answer", "--repo", str(repo)], REPLY.replace("role: architect", "role: boss"), _index_dir)
    assert result.returncode == 1
    assert result.stderr.strip() == ("error: AGENT_REQUEST line 5, field role: 'boss' is not one of librarian, "
                                     "architect, builder, critic, interpreter (in stdin)")
    assert result.stdout == ""


def test_unreadable_input_file(repo: Path, _index_dir: Path, tmp_path: Path) -> None:
    result = run(["answer", "--repo", str(repo), str(tmp_path / "none.txt")], "", _index_dir)
    assert result.returncode == 1 and "cannot read" in result.stderr and "Traceback" not in result.stderr


def test_help_has_example(_index_dir: Path) -> None:
    assert "Example:" in run(["answer", "--help"], "", _index_dir).stdout
