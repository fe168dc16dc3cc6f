"""The one path check (DESIGN.md "Layers", loop spec §4.2): nothing ever escapes the root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeloop.environments.errors import FileNotFoundInWorkspaceError, PathOutsideWorkspaceError
from codeloop.environments.resolver import relative_to_root, resolve_workspace_path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A workspace with a file, a subdirectory, and symlinks pointing in, out and in a loop."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print(1)\n")
    (root / "link_in").symlink_to("src")
    (root / "link_out").symlink_to(outside)
    (root / "link_out_rel").symlink_to("../outside/secret.txt")
    (root / "src" / "pkg" / "up").symlink_to("../..")
    (root / "src" / "pkg" / "upup").symlink_to("../../..")
    (root / "loop_a").symlink_to("loop_b")
    (root / "loop_b").symlink_to("loop_a")
    (root / "dangling_out").symlink_to("/nonexistent_dir_for_codeloop/x")
    return root


def _real(p: Path) -> str:
    return os.path.realpath(p)


def test_relative_path_resolves_inside(tree: Path) -> None:
    assert resolve_workspace_path(tree, "src/app.py") == Path(_real(tree / "src" / "app.py"))


def test_empty_and_dot_name_the_root(tree: Path) -> None:
    assert resolve_workspace_path(tree, "") == Path(_real(tree))
    assert resolve_workspace_path(tree, ".") == Path(_real(tree))


def test_absolute_path_inside_is_allowed(tree: Path) -> None:
    assert resolve_workspace_path(tree, str(tree / "src" / "app.py")) == Path(_real(tree / "src/app.py"))


def test_absolute_path_outside_is_rejected_naming_the_path(tree: Path) -> None:
    with pytest.raises(PathOutsideWorkspaceError, match="/etc/passwd") as info:
        resolve_workspace_path(tree, "/etc/passwd")
    assert info.value.path == "/etc/passwd"


@pytest.mark.parametrize("path", ["..", "../outside/secret.txt", "src/../../outside", "a/b/../../../x"])
def test_dotdot_escape_is_rejected(tree: Path, path: str) -> None:
    with pytest.raises(PathOutsideWorkspaceError, match="outside the workspace"):
        resolve_workspace_path(tree, path)


def test_dotdot_that_stays_inside_is_fine(tree: Path) -> None:
    assert resolve_workspace_path(tree, "src/pkg/../app.py") == Path(_real(tree / "src/app.py"))


@pytest.mark.parametrize(
    "path", ["link_out", "link_out/secret.txt", "link_out_rel", "link_out/new_file.txt", "dangling_out"]
)
def test_symlink_pointing_out_is_rejected(tree: Path, path: str) -> None:
    with pytest.raises(PathOutsideWorkspaceError):
        resolve_workspace_path(tree, path)


def test_symlink_inside_is_followed(tree: Path) -> None:
    assert resolve_workspace_path(tree, "link_in/app.py") == Path(_real(tree / "src/app.py"))


def test_dotdot_after_symlink_follows_the_link_target(tree: Path) -> None:
    # src/pkg/up -> ../.. (the root); so up/.. is the root's parent: outside.
    assert resolve_workspace_path(tree, "src/pkg/up/src") == Path(_real(tree / "src"))
    with pytest.raises(PathOutsideWorkspaceError):
        resolve_workspace_path(tree, "src/pkg/up/..")
    with pytest.raises(PathOutsideWorkspaceError):
        resolve_workspace_path(tree, "src/pkg/upup/outside/secret.txt")


def test_new_file_under_missing_dirs_resolves_through_deepest_parent(tree: Path) -> None:
    assert resolve_workspace_path(tree, "link_in/new/deep/f.txt") == Path(_real(tree / "src/new/deep/f.txt"))


def test_symlink_loop_is_rejected_not_crashing(tree: Path) -> None:
    with pytest.raises(PathOutsideWorkspaceError, match="symbolic links"):
        resolve_workspace_path(tree, "loop_a/x")


def test_nul_byte_is_rejected(tree: Path) -> None:
    with pytest.raises(PathOutsideWorkspaceError, match="NUL"):
        resolve_workspace_path(tree, "src/app.py\x00.txt")


def test_overlong_path_and_component_are_rejected(tree: Path) -> None:
    with pytest.raises(PathOutsideWorkspaceError, match="too long"):
        resolve_workspace_path(tree, "a/" * 2100)
    with pytest.raises(PathOutsideWorkspaceError, match="component of 256 bytes"):
        resolve_workspace_path(tree, "x" * 256)
    assert resolve_workspace_path(tree, "x" * 255).name == "x" * 255


def test_unencodable_path_is_rejected(tree: Path) -> None:
    with pytest.raises(PathOutsideWorkspaceError, match="not a valid file name"):
        resolve_workspace_path(tree, "bad\ud800name")


def test_must_exist(tree: Path) -> None:
    with pytest.raises(FileNotFoundInWorkspaceError, match=r"nope\.txt"):
        resolve_workspace_path(tree, "nope.txt", must_exist=True)
    assert resolve_workspace_path(tree, "src", must_exist=True).is_dir()


def test_relative_to_root(tree: Path) -> None:
    assert relative_to_root(tree, resolve_workspace_path(tree, "src/app.py")) == "src/app.py"
    assert relative_to_root(tree, resolve_workspace_path(tree, ".")) == "."
    with pytest.raises(PathOutsideWorkspaceError):
        relative_to_root(tree, "/etc")


_COMPONENTS = st.one_of(
    st.sampled_from(
        ["..", ".", "", "src", "pkg", "app.py", "link_in", "link_out", "link_out_rel", "up", "upup",
         "loop_a", "dangling_out", "outside", "secret.txt", "ws", "new"]
    ),
    st.text(min_size=0, max_size=12),
)
_PATHS = st.one_of(
    st.lists(_COMPONENTS, max_size=10).map("/".join),
    st.lists(_COMPONENTS, max_size=10).map(lambda parts: "/" + "/".join(parts)),
    st.lists(_COMPONENTS, max_size=10).map(lambda parts: "@ROOT@/" + "/".join(parts)),
    st.text(max_size=300),
    st.text(alphabet="a/.", min_size=200, max_size=5000),
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(path=_PATHS)
def test_property_any_path_resolves_inside_or_raises_path_error(tree: Path, path: str) -> None:
    """Whatever the string, the result is inside the root or PathOutsideWorkspaceError: nothing else."""
    real_root = _real(tree)
    path = path.replace("@ROOT@", str(tree), 1)
    try:
        result = resolve_workspace_path(tree, path)
    except PathOutsideWorkspaceError as exc:
        assert exc.path is not None
        return
    text = str(result)
    assert text == real_root or text.startswith(real_root + "/")
    # Where the kernel would land, following every link that exists, is inside too.
    landing = os.path.realpath(text)
    assert landing == real_root or landing.startswith(real_root + "/")
