"""Building the index: .gitignore, incremental rebuilds, staleness, location."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from codeloop.index import CodeIndex, db_path_for


def test_gitignore_and_binary_files_are_not_indexed(built: CodeIndex) -> None:
    files = set(built.files())
    assert {"build/generated.py", "debug.log", "secret/token.py", "image.png"}.isdisjoint(files)
    assert {"keep.log", "pkg/core.py", "docs/guide.md", "web/src/view.tsx"} <= files


def test_index_lives_in_codeloop_index_dir(sample_repo: Path, _index_dir: Path) -> None:
    index = CodeIndex(sample_repo)
    index.build()
    assert index.db_path.parent == _index_dir
    assert index.db_path.exists()
    assert db_path_for(sample_repo) == index.db_path
    assert not any(p.suffix == ".sqlite" for p in sample_repo.rglob("*"))


def test_rebuild_without_changes_touches_nothing(built: CodeIndex) -> None:
    report = built.build()
    assert (report.added, report.updated, report.removed) == (0, 0, 0)
    assert report.unchanged == report.files_total == len(built.files()) + 1  # image.png: recorded, not listed
    assert not report.full_rebuild


def test_rebuild_reparses_only_the_changed_file(built: CodeIndex, sample_repo: Path) -> None:
    target = sample_repo / "pkg" / "models.py"
    target.write_text("class Customer:\n    pass\n")
    report = built.build()
    assert (report.added, report.updated, report.removed) == (0, 1, 0)
    assert report.unchanged == report.files_total - 1
    assert [s.qualified_name for s in built.symbols("pkg/models.py")] == ["Customer"]
    assert built.search("Customer")[0].path == "pkg/models.py"


def test_touch_without_content_change_is_not_reparsed(built: CodeIndex, sample_repo: Path) -> None:
    target = sample_repo / "pkg" / "helpers.py"
    stat = target.stat()
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    report = built.build()
    assert report.updated == 0
    assert not built.status().stale


def test_deleted_file_is_removed_with_its_symbols_and_edges(built: CodeIndex, sample_repo: Path) -> None:
    (sample_repo / "pkg" / "helpers.py").unlink()
    report = built.build()
    assert report.removed == 1
    assert "pkg/helpers.py" not in built.files()
    assert built.symbols(name="boot") == []
    assert built.search("booted") == []
    assert "pkg/helpers.py" not in built.impact("pkg/core.py").outbound


def test_new_file_resolves_an_import_of_another_file(built: CodeIndex, sample_repo: Path) -> None:
    assert [d.specifier for d in built.diagnostics("pkg/helpers.py")] == [".nothere"]
    (sample_repo / "pkg" / "nothere.py").write_text("x = 1\n")
    built.build()
    assert built.diagnostics("pkg/helpers.py") == []
    assert built.impact("pkg/nothere.py").inbound == ("pkg/helpers.py",)


def test_newly_ignored_file_leaves_the_index(built: CodeIndex, sample_repo: Path) -> None:
    with (sample_repo / ".gitignore").open("a") as fh:
        fh.write("java/\n")
    assert built.build().removed == 1
    assert "java/App.java" not in built.files()


def test_status_reports_changed_files_as_stale(built: CodeIndex, sample_repo: Path) -> None:
    assert not built.status().stale
    (sample_repo / "new.py").write_text("def fresh():\n    pass\n")
    state = built.status()
    assert state.stale and state.stale_reasons == ("files_changed: 1",)
    built.build()
    assert not built.status().stale


def test_parser_version_change_marks_stale_and_rebuilds(built: CodeIndex) -> None:
    conn = sqlite3.connect(built.db_path)
    conn.execute("UPDATE meta SET value = 'extract=0' WHERE key = 'parser_version'")
    conn.commit()
    conn.close()
    state = built.status()
    assert state.stale and "parser_changed" in state.stale_reasons
    report = built.build()
    assert report.full_rebuild and report.added == report.files_total
    assert not built.status().stale


def test_schema_version_change_marks_stale(built: CodeIndex) -> None:
    conn = sqlite3.connect(built.db_path)
    conn.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    assert "schema_changed" in built.status().stale_reasons
    assert built.build().full_rebuild


def test_status_before_first_build(sample_repo: Path) -> None:
    state = CodeIndex(sample_repo).status()
    assert not state.exists and state.stale and state.stale_reasons == ("not_built",)


def test_symlink_out_of_the_repository_is_not_followed(sample_repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.py").write_text("def leaked():\n    pass\n")
    (sample_repo / "link").symlink_to(outside)
    index = CodeIndex(sample_repo)
    index.build()
    assert index.symbols(name="leaked") == []


def test_edited_imports_rewrite_only_that_files_edges(built: CodeIndex, sample_repo: Path) -> None:
    (sample_repo / "app.py").write_text("from pkg.models import User\n")
    report = built.build()
    assert (report.added, report.updated) == (0, 1)
    assert "app.py" in built.impact("pkg/models.py").inbound
    assert built.impact("pkg/core.py").inbound == ()
    assert built.impact("pkg/helpers.py").inbound == ("pkg/core.py",)


def test_corrupt_database_is_discarded_and_rebuilt(built: CodeIndex) -> None:
    for suffix in ("-wal", "-shm"):
        Path(f"{built.db_path}{suffix}").unlink(missing_ok=True)
    built.db_path.write_bytes(b"this is not sqlite" * 100)
    assert built.status().stale_reasons == ("not_built",)
    report = built.build()
    assert report.full_rebuild and report.added == report.files_total
    assert built.search("booted")[0].path == "pkg/helpers.py"
