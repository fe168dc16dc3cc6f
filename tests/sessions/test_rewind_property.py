"""Property: whatever the file tools did over any turns, rewind to turn k gives back the
workspace as it was at the end of turn k, byte for byte."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.agent import events as ev
from codeloop.sessions import Checkpoints, SessionLog, rewind

PATHS = ("a.txt", "d/b.bin", "d/e/c")
Action = tuple[str, bytes | None]
turns_strategy = st.lists(
    st.lists(st.tuples(st.sampled_from(PATHS), st.none() | st.binary(max_size=50)), max_size=4),
    min_size=1, max_size=5,
)


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@settings(max_examples=30, deadline=None)
@given(turns=turns_strategy, initial=st.dictionaries(st.sampled_from(PATHS), st.binary(max_size=20)),
       data=st.data())
def test_rewind_restores_the_state_at_the_end_of_any_turn(
        turns: list[list[Action]], initial: dict[str, bytes], data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CODELOOP_STATE_DIR"] = str(Path(tmp) / "state")
        ws = Path(tmp) / "ws"
        ws.mkdir()
        for path, content in initial.items():
            (ws / path).parent.mkdir(parents=True, exist_ok=True)
            (ws / path).write_bytes(content)
        states = [snapshot(ws)]
        checkpoints = Checkpoints("p", ws)
        with SessionLog("p") as log:
            for actions in turns:
                end = ev.AssistantTextEnd(session_id="p", text="")
                log.append(end)
                checkpoints.observe(end)
                for path, content in actions:
                    checkpoints.before_write([path])
                    target = ws / path
                    if content is None:
                        target.unlink(missing_ok=True)
                    else:
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_bytes(content)
                    checkpoints.after_write([path])
                states.append(snapshot(ws))
        k = data.draw(st.integers(0, len(turns)), label="rewind to")
        rewind("p", k, ws)
        assert snapshot(ws) == states[k]
