"""The gate fields of the frontmatter (requires_approval: all, before_tools, escalate_with, warn_with):
validated with line and field like every field, and round-tripped by render_skill."""

from __future__ import annotations

import pytest

from capabilities.skills import SkillParseError, parse_skill, render_skill

HEAD = "---\nid: runbook\ndescription: Read before acting.\ntools: [get_forecast]\n"


def parse(lines: str):
    return parse_skill(f"{HEAD}{lines}---\nBody.\n")


def test_the_gate_fields_parse_and_round_trip() -> None:
    spec = parse(
        "requires_approval: all\nbefore_tools: [update_state]\nescalate_with: [refunds]\nwarn_with: [todos]\n"
    )

    assert spec.requires_approval == "all"
    assert (spec.before_tools, spec.escalate_with, spec.warn_with) == (
        ["update_state"],
        ["refunds"],
        ["todos"],
    )
    assert parse_skill(render_skill(spec)) == spec


@pytest.mark.parametrize(
    ("lines", "field", "line", "message"),
    [
        ("requires_approval: some\n", "requires_approval", 5, "must be 'all' or a list"),
        ("before_tools: [update_state, update_state]\n", "before_tools", 5, "twice"),
        ("before_tools: [get_forecast]\n", "before_tools", 5, "this skill's own tool"),
        ("escalate_with:\n  - refunds\n  - Bad Id\n", "escalate_with", 7, "entry 2 must be a capability id"),
        ("warn_with: [runbook]\n", "warn_with", 5, "this skill itself"),
        ("warn_with: refunds\n", "warn_with", 5, "must be a list of capability ids"),
    ],
)
def test_a_bad_gate_field_names_its_line_and_field(lines: str, field: str, line: int, message: str) -> None:
    with pytest.raises(SkillParseError) as caught:
        parse(lines)

    assert (caught.value.field, caught.value.line) == (field, line)
    assert message in caught.value.message
