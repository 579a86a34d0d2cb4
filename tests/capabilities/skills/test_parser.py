"""The skill file parser: one test per kind of error, the happy path, and render/parse round trips.

Pure parsing: these tests need no database (run with ``-p no:django``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capabilities.skills import (
    MAX_DESCRIPTION_CHARS,
    SKILL_ID_PATTERN,
    TOOL_NAME_PATTERN,
    SkillBundleError,
    SkillParseError,
    SkillSpec,
    parse_skill,
    parse_skill_files,
    render_skill,
    source_sha256,
)

KNOWN_TOOLS = {
    "update_state",
    "add_todo",
    "complete_todo",
    "get_forecast",
    "refund_status",
    "issue_refund",
    "write_document",
    "show_recipe",
}
SKILLS_DIR = Path(__file__).resolve().parents[3] / "skills"

REFUNDS = """\
---
id: refunds                 # required, stable
description: Use for refund eligibility, refund status, or processing a refund.
tools: [refund_status, issue_refund]
defer_loading: true
requires_approval: [issue_refund]
model_settings: {temperature: 0.2}
---

Always confirm the order ID before issuing a refund.
Never refund twice.

"""


def skill(*frontmatter: str, body: str = "Do the thing.") -> str:
    """A skill file whose frontmatter lines start on line 2."""
    return "\n".join(["---", *frontmatter, "---", body]) + "\n"


def parse_error(source: str, **kwargs: Any) -> SkillParseError:
    with pytest.raises(SkillParseError) as caught:
        parse_skill(source, **kwargs)
    return caught.value


def test_a_valid_file_parses_to_the_expected_spec() -> None:
    spec = parse_skill(REFUNDS, known_tools=KNOWN_TOOLS, max_body_chars=1000)

    assert spec == SkillSpec(
        id="refunds",
        description="Use for refund eligibility, refund status, or processing a refund.",
        tools=["refund_status", "issue_refund"],
        defer_loading=True,
        requires_approval=["issue_refund"],
        model_settings={"temperature": 0.2},
        instructions="Always confirm the order ID before issuing a refund.\nNever refund twice.",
    )


def test_optional_keys_take_their_defaults() -> None:
    spec = parse_skill(skill("id: minimal", "description: '  Use for nothing much.  '", body=""))

    assert spec.description == "Use for nothing much."
    assert (spec.tools, spec.defer_loading, spec.requires_approval) == ([], True, [])
    assert (spec.model_settings, spec.instructions) == ({}, "")


def test_windows_line_endings_parse_like_unix_ones() -> None:
    assert parse_skill(REFUNDS.replace("\n", "\r\n")) == parse_skill(REFUNDS)


def test_it_requires_the_first_line_to_open_the_frontmatter() -> None:
    error = parse_error("\n" + REFUNDS)

    assert (error.line, error.field) == (1, None)
    assert "first line must be '---'" in error.message


def test_it_reports_the_line_and_problem_of_invalid_yaml() -> None:
    error = parse_error(skill("id: refunds", "description: Use for refunds: all of them", "tools: [a"))

    assert (error.line, error.field) == (3, None)
    assert "invalid YAML: mapping values are not allowed here" in error.message


def test_it_rejects_frontmatter_that_is_never_closed() -> None:
    error = parse_error("---\nid: refunds\ndescription: Use for refunds.\nAlways confirm the order.\n")

    assert (error.line, error.field) == (1, None)
    assert "never closed" in error.message


def test_it_rejects_frontmatter_that_is_not_a_mapping() -> None:
    error = parse_error(skill("", "- id: refunds"))

    assert (error.line, error.field) == (3, None)
    assert "must be a mapping" in error.message


def test_it_rejects_empty_frontmatter() -> None:
    assert parse_error(skill()).line == 1


def test_it_names_a_missing_id() -> None:
    error = parse_error(skill("description: Use for refunds."))

    assert (error.field, error.line) == ("id", 1)  # the opening ---
    assert "'id' is missing" in error.message


def test_it_names_a_missing_description() -> None:
    error = parse_error(skill("id: refunds"))

    assert (error.field, error.line) == ("description", 1)


def test_it_names_the_line_of_an_id_that_breaks_the_pattern() -> None:
    error = parse_error(skill("description: Use for refunds.", "id: Refunds"))

    assert (error.field, error.line) == ("id", 3)
    assert SKILL_ID_PATTERN in error.message
    assert str(error).startswith("line 3, field 'id': must match ^[a-z]")


def test_it_asks_to_quote_an_id_that_yaml_reads_as_a_boolean() -> None:
    error = parse_error(skill("id: yes", "description: Use for refunds."))

    assert (error.field, error.line) == ("id", 2)
    assert "put it in quotes" in error.message


def test_it_names_the_line_of_an_unknown_key() -> None:
    error = parse_error(skill("id: refunds", "description: Use for refunds.", "", "tool: [issue_refund]"))

    assert (error.field, error.line) == ("tool", 5)
    assert "unknown key 'tool'" in error.message
    assert "did you mean 'tools'?" in error.message


def test_it_rejects_a_key_given_twice() -> None:
    error = parse_error(skill("id: refunds", "description: Use for refunds.", "id: payments"))

    assert error.line == 4
    assert "duplicate key 'id'" in error.message


def test_it_names_an_unknown_tool_and_the_line_of_the_tools_key() -> None:
    error = parse_error(
        skill("id: refunds", "description: Use for refunds.", "tools: [refund_status, refund_it]"),
        known_tools=KNOWN_TOOLS,
    )

    assert (error.field, error.line) == ("tools", 4)
    assert "unknown tool 'refund_it'" in error.message


def test_it_names_the_line_of_an_unknown_tool_in_a_block_list() -> None:
    source = skill(
        "id: refunds", "description: Use for refunds.", "tools:", "  - refund_status", "  - refund_it"
    )

    assert parse_error(source, known_tools=KNOWN_TOOLS).line == 6


def test_tools_are_not_checked_without_known_tools() -> None:
    assert parse_skill(skill("id: x", "description: Use for x.", "tools: [anything]")).tools == ["anything"]


def test_it_rejects_requires_approval_entries_that_are_not_tools_of_the_skill() -> None:
    error = parse_error(
        skill(
            "id: refunds",
            "description: Use for refunds.",
            "tools: [refund_status]",
            "requires_approval: [issue_refund]",
        )
    )

    assert (error.field, error.line) == ("requires_approval", 5)
    assert "'issue_refund' is not one of this skill's tools" in error.message


@pytest.mark.parametrize(
    ("tools_line", "expected"),
    [
        ("tools: refund_status", "must be a list of tool names"),
        ("tools:", "must be a list of tool names"),
        ("tools: [refund_status, 3]", "entry 2 must be a tool name, not the number 3"),
        ("tools: [refund_status, refund_status]", "lists 'refund_status' twice"),
        ("tools: ['not a name']", "is not a valid tool name"),
    ],
)
def test_it_rejects_tools_that_are_not_a_list_of_unique_tool_names(tools_line: str, expected: str) -> None:
    error = parse_error(skill("id: refunds", "description: Use for refunds.", tools_line))

    assert (error.field, error.line) == ("tools", 4)
    assert expected in error.message


def test_it_rejects_a_defer_loading_that_is_not_a_boolean() -> None:
    error = parse_error(skill("id: x", "description: Use for x.", "defer_loading: 'no'"))

    assert (error.field, error.line) == ("defer_loading", 4)


def test_it_names_an_unknown_model_settings_key_and_its_line() -> None:
    error = parse_error(
        skill("id: x", "description: Use for x.", "model_settings:", "  temperature: 0.2", "  temprature: 1")
    )

    assert (error.field, error.line) == ("model_settings", 6)
    assert "unknown setting 'temprature'" in error.message
    assert "did you mean 'temperature'?" in error.message


def test_it_rejects_model_settings_that_are_not_plain_json() -> None:
    error = parse_error(skill("id: x", "description: Use for x.", "model_settings: {extra_body: 2024-01-01}"))

    assert (error.field, error.line) == ("model_settings", 4)
    assert "plain JSON" in error.message


@pytest.mark.parametrize(
    ("description_lines", "expected"),
    [
        (["description: ''"], "must not be empty"),
        (["description: |", "  Use for refunds.", "  And more."], "must be a single line"),
        ([f"description: {'x' * (MAX_DESCRIPTION_CHARS + 1)}"], f"the limit is {MAX_DESCRIPTION_CHARS}"),
    ],
)
def test_it_rejects_a_description_that_is_empty_multi_line_or_too_long(
    description_lines: list[str], expected: str
) -> None:
    error = parse_error(skill("id: x", *description_lines))

    assert (error.field, error.line) == ("description", 3)
    assert expected in error.message


def test_it_rejects_a_body_over_the_limit_and_names_where_it_starts() -> None:
    source = skill("id: x", "description: Use for x.", body="\n123456\n")

    assert parse_skill(source, max_body_chars=6).instructions == "123456"
    error = parse_error(source, max_body_chars=5)
    assert (error.field, error.line) == ("body", 5)
    assert "6 characters long; the limit is 5" in error.message


def test_the_error_string_names_file_line_and_field() -> None:
    error = SkillParseError("must match …", field="id", line=3)
    assert str(error) == "line 3, field 'id': must match …"

    error.filename = "refunds.md"
    assert str(error) == "refunds.md: line 3, field 'id': must match …"
    assert error.as_dict() == {"filename": "refunds.md", "line": 3, "field": "id", "message": "must match …"}


def test_a_bundle_reports_duplicate_ids_naming_both_files() -> None:
    files = {"b.md": skill("id: refunds", "description: Use for b."), "a.md": REFUNDS}

    with pytest.raises(SkillBundleError) as caught:
        parse_skill_files(files, known_tools=KNOWN_TOOLS, max_body_chars=None)

    [error] = caught.value.errors
    assert (error.filename, error.field, error.line) == ("b.md", "id", 2)
    assert "duplicate id 'refunds': a.md uses it too" in error.message
    assert str(error).startswith("b.md: line 2, field 'id': ")


def test_a_bundle_reports_every_invalid_file_before_failing() -> None:
    files = {
        "good.md": REFUNDS,
        "bad-id.md": skill("id: Bad", "description: Use for x."),
        "bad-tool.md": skill("id: y", "description: Use for y.", "tools: [nope]"),
    }

    with pytest.raises(SkillBundleError) as caught:
        parse_skill_files(files, known_tools=KNOWN_TOOLS, max_body_chars=None)

    assert [(e.filename, e.field) for e in caught.value.errors] == [
        ("bad-id.md", "id"),
        ("bad-tool.md", "tools"),
    ]
    assert "2 problem(s)" in str(caught.value)


def test_a_valid_bundle_maps_each_filename_to_its_spec() -> None:
    specs = parse_skill_files({"refunds.md": REFUNDS}, known_tools=KNOWN_TOOLS, max_body_chars=None)

    assert specs == {"refunds.md": parse_skill(REFUNDS)}


def test_the_demo_skills_parse_with_the_demo_tools() -> None:
    files = {path.name: path.read_text() for path in SKILLS_DIR.glob("*.md")}

    specs = parse_skill_files(files, known_tools=KNOWN_TOOLS, max_body_chars=20_000)

    assert {name: spec.id for name, spec in specs.items()} == {
        "recipes.md": "recipes",
        "refunds.md": "refunds",
        "todos.md": "todos",
        "weather.md": "weather",
        "writer.md": "writer",
    }
    assert specs["refunds.md"].requires_approval == ["issue_refund"]
    assert specs["refunds.md"].model_settings == {"temperature": 0.2}
    assert specs["todos.md"].tools == ["add_todo", "complete_todo"]
    assert specs["weather.md"].tools == ["get_forecast"]
    assert specs["writer.md"].predict_state == [
        {"tool": "write_document", "argument": "text", "state_key": "/document"}
    ]


def test_render_writes_keys_in_order_and_omits_defaults() -> None:
    spec = SkillSpec(id="weather", description="Use for weather.", tools=["get_forecast"], instructions="Hi.")

    assert render_skill(spec) == (
        "---\nid: weather\ndescription: Use for weather.\ntools: [get_forecast]\n---\nHi.\n"
    )


def test_a_spec_built_in_code_follows_the_same_rules_and_normalizes_like_a_file() -> None:
    with pytest.raises(ValueError, match="must match"):
        SkillSpec(id="Bad", description="Use for x.")

    spec = SkillSpec(
        id="x",
        description=" Use for x. ",
        model_settings={"stop_sequences": ("END",)},
        instructions="\r\n\n  Step one.\r\nStep two.\n\n",
    )

    assert spec.description == "Use for x."
    assert spec.model_settings == {"stop_sequences": ["END"]}
    assert spec.instructions == "  Step one.\nStep two."
    assert parse_skill(render_skill(spec)) == spec


def test_source_sha256_is_the_hex_digest_of_the_utf8_source() -> None:
    assert source_sha256("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert source_sha256(REFUNDS) != source_sha256(REFUNDS + " ")


@st.composite
def specs(draw: st.DrawFn) -> SkillSpec:
    tools = draw(st.lists(st.from_regex(TOOL_NAME_PATTERN, fullmatch=True), unique=True, max_size=4))
    description = draw(
        st.text(min_size=1, max_size=MAX_DESCRIPTION_CHARS)
        .map(str.strip)
        .filter(lambda text: len(text.splitlines()) == 1)
    )
    model_settings = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "temperature": st.floats(0, 2),
                "max_tokens": st.integers(1, 10**6),
                "stop_sequences": st.lists(st.text(), max_size=3),
                "extra_headers": st.dictionaries(st.text(), st.text(), max_size=3),
                "thinking": st.sampled_from([True, "low", "high"]),
            },
        )
    )
    return SkillSpec(
        id=draw(st.from_regex(SKILL_ID_PATTERN, fullmatch=True)),
        description=description,
        tools=tools,
        defer_loading=draw(st.booleans()),
        requires_approval=draw(st.lists(st.sampled_from(tools), unique=True) if tools else st.just([])),
        model_settings=model_settings,
        instructions=draw(st.text()),
    )


@given(specs())
def test_render_then_parse_gives_back_the_same_spec(spec: SkillSpec) -> None:
    assert parse_skill(render_skill(spec)) == spec
