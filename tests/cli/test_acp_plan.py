"""The plan update of ``codeloop acp`` reads a plan-mode answer with a Markdown parser."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from codeloop.cli.acp_updates import plan_update

STEP = st.text(st.characters(whitelist_categories=("L", "N"), whitelist_characters=" _-"), min_size=1,
               max_size=20).map(str.strip).filter(bool)


@given(st.text(max_size=300))
def test_any_answer_gives_a_plan_or_none_and_never_fails(answer: str) -> None:
    plan = plan_update(answer)
    assert plan is None or (plan.entries and all(e.content and e.status == "pending" for e in plan.entries))


@given(st.lists(STEP, min_size=1, max_size=6), st.sampled_from([".", ")"]))
def test_the_first_numbered_list_is_the_plan(steps: list[str], mark: str) -> None:
    answer = "Here is the plan.\n\n" + "\n".join(f"{i}{mark} {step}" for i, step in enumerate(steps, 1))
    answer += "\n\n- not a step\n\n1. nor this, a second list\n"
    plan = plan_update(answer)
    assert plan is not None and [e.content for e in plan.entries] == steps


def test_no_numbered_list_no_plan() -> None:
    assert plan_update("I looked around; nothing needs changing.\n\n- a bullet is not a step") is None
