"""A small repository for codali answers, indexed in a per-test cache directory."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_FILES = {
    "src/public/index.html": "<!doctype html>\n<html>\n<body>\n<h1>Landing page</h1>\n</body>\n</html>\n",
    "src/auth/login.ts": 'import { hash } from "./hash";\nexport function login(user: string) { return hash(user); }\n',
    "src/auth/hash.ts": "export function hash(s: string) { return s.length; }\n",
    "src/app.py": "import os\nimport importlib\n\nclass App:\n    def run(self):\n"
                  "        return importlib.import_module(os.environ['X'])\n",
    "docs/guide.md": "# Guide\n\n## Login flow\n\nThe login page posts credentials to the auth service.\n",
    "big.txt": "".join(f"line {i}\n" for i in range(1, 201)),
}


@pytest.fixture(autouse=True)
def _index_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "index-cache"
    monkeypatch.setenv("CODELOOP_INDEX_DIR", str(cache))
    return cache


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for rel, text in REPO_FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
