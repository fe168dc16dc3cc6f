"""A generated multi-language repository with known symbols and imports."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.index import CodeIndex

SAMPLE_FILES: dict[str, str] = {
    ".gitignore": "build/\n*.log\n!keep.log\nsecret/\n",
    "build/generated.py": "def generated():\n    pass\n",
    "debug.log": "noise\n",
    "keep.log": "kept log line about zebrafish\n",
    "secret/token.py": "TOKEN = 'x'\n",
    "pkg/__init__.py": "",
    "pkg/core.py": (
        "import os\n"
        "from . import helpers\n"
        "from .models import User\n"
        "\n"
        "class Engine:\n"
        "    def start(self):\n"
        "        return helpers.boot()\n"
        "\n"
        "def run(name):\n"
        "    import importlib\n"
        "    return importlib.import_module(name)\n"
    ),
    "pkg/helpers.py": "import requests\nfrom .nothere import x\n\n\ndef boot():\n    return 'booted'\n",
    "pkg/models.py": "class User:\n    def name(self):\n        return 'u'\n\nLIMIT = 3\n",
    "app.py": "from pkg.core import Engine\n\nEngine().start()\n",
    "web/src/main.ts": (
        'import { util } from "./util";\n'
        'import React from "react";\n'
        "const lazy = import(\"./lazy\");\n"
        "export function main(): void {}\n"
        "interface Props { id: number }\n"
        "class App {\n  render() { return util(); }\n}\n"
    ),
    "web/src/util.ts": "export const util = () => 1;\n",
    "web/src/lazy.js": "module.exports = {};\nconst m = require(process.env.MOD);\n",
    "web/src/view.tsx": 'import { main } from "./main.js";\nexport function View() { return <div/>; }\n',
    "go/go.mod": "module example.com/demo\n\ngo 1.22\n",
    "go/main.go": (
        "package main\n\nimport (\n\t\"fmt\"\n\t\"example.com/demo/store\"\n)\n\n"
        "type Server struct{}\n\nfunc (s *Server) Handle() { fmt.Println(store.New()) }\n\nfunc main() {}\n"
    ),
    "go/store/store.go": "package store\n\ntype Store interface{ Get() int }\n\nfunc New() int { return 1 }\n",
    "rust/Cargo.toml": "[package]\nname = \"demo\"\n",
    "rust/src/lib.rs": (
        "mod parser;\npub use crate::parser::Parser;\n\npub struct Config {}\n\n"
        "impl Config {\n    pub fn new() -> Self { Config {} }\n}\n\ntrait Greet {\n    fn hi(&self);\n}\n"
    ),
    "rust/src/parser.rs": "use super::Config;\n\npub struct Parser;\n\nimpl Parser {\n    pub fn parse(&self) {}\n}\n",
    "java/App.java": "class App {\n    int count;\n    void run() {}\n}\n",
    "c/util.c": "#define MAX 10\nstruct point { int x; };\nint add(int a, int b) { return a + b; }\n",
    "cpp/shape.cpp": "namespace geo {\nclass Shape {\n public:\n  int area() { return 0; }\n};\n}\n",
    "scripts/deploy.sh": "#!/bin/sh\nTARGET=prod\ndeploy() {\n  echo hi\n}\n",
    "docs/guide.md": (
        "# Guide\n\nIntro text.\n\n## Installation\n\nRun the flux capacitor setup.\n\n"
        "```\n# not a heading\n```\n\n## Usage\n\nCall the engine.\n"
    ),
}


def write_repo(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture(autouse=True)
def _index_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "index-cache"
    monkeypatch.setenv("CODELOOP_INDEX_DIR", str(cache))
    return cache


@pytest.fixture
def sample_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write_repo(root, SAMPLE_FILES)
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0binary")
    return root


@pytest.fixture
def built(sample_repo: Path) -> CodeIndex:
    index = CodeIndex(sample_repo)
    index.build()
    return index
