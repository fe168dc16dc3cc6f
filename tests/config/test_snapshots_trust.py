"""A repository's ``[snapshots]`` narrows what undo covers, so it applies only once trusted
(issue 35; DESIGN: configuration found in a repository cannot lower safety until trusted)."""

from __future__ import annotations

from pathlib import Path

from codeloop.config import load_config
from codeloop.policy.trust import trust


def test_an_untrusted_project_cannot_switch_off_or_narrow_undo(dirs: tuple[Path, Path]) -> None:
    user, ws = dirs
    user.write_text('[snapshots]\nmax_file_mb = 5\n')
    project = ws / ".codeloop" / "config.toml"
    project.write_text('model = "m"\n[snapshots]\nenabled = false\nexclude_dirs = ["secrets"]\n')
    config = load_config(ws)
    assert dict(config.snapshots) == {"max_file_mb": 5}  # the user's own table stands, nothing of the project's
    assert config.model == "m" and len(config.warnings) == 1
    assert "ignored snapshots until you trust this file" in config.warnings[0]
    trust(project, project.read_bytes())
    config = load_config(ws)
    assert dict(config.snapshots) == {"max_file_mb": 5, "enabled": False, "exclude_dirs": ["secrets"]}
    assert config.warnings == ()
