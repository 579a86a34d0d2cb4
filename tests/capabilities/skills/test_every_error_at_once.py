"""A skill file with several problems reports all of them in one go, each with its line and field, so an
author fixes the file in one round trip (DESIGN.md §9, §15).

A missing required key has no line of its own: it points at line 1, the opening ``---`` of the
frontmatter. Pure parsing: no database.
"""

from __future__ import annotations

import pytest

from capabilities.skills import SkillBundleError, SkillParseError, parse_skill, parse_skill_files

KNOWN_TOOLS = {"get_forecast", "refund_status", "issue_refund"}


def problems(source: str, **kwargs: object) -> list[tuple[int | None, str | None, str]]:
    with pytest.raises(SkillParseError) as caught:
        parse_skill(source, **kwargs)  # type: ignore[arg-type]
    return [(error.line, error.field, error.message) for error in caught.value.errors]


def test_a_bad_id_and_a_missing_description_are_both_reported_with_their_lines() -> None:
    found = problems("---\nid: Bad Id\n---\nBody.\n")

    assert [(line, field) for line, field, _ in found] == [(1, "description"), (2, "id")]
    assert "the required key 'description' is missing" in found[0][2]
    assert found[1][2].startswith("must match")


def test_a_missing_key_points_at_the_opening_delimiter_even_after_comments() -> None:
    found = problems("---\n# a comment\n\nid: weather\n---\nBody.\n")

    assert found == [(1, "description", "the required key 'description' is missing")]


def test_every_field_unknown_key_unknown_tool_and_the_body_are_reported_in_line_order() -> None:
    source = "\n".join(
        [
            "---",
            "id: Weather",  # 2: bad id
            "descripton: Use for weather.",  # 3: unknown key (and so description is missing)
            "tools: [get_forecast, get_weather, get_rain]",  # 4: two unknown tools
            "defer_loading: maybe",  # 5: not a boolean
            "model_settings: {temprature: 1}",  # 6: unknown setting
            "---",
            "x" * 11,  # 8: the body, over the limit
        ]
    )

    found = problems(source, known_tools=KNOWN_TOOLS, max_body_chars=10)

    assert [(line, field) for line, field, _ in found] == [
        (1, "description"),
        (2, "id"),
        (3, "descripton"),
        (4, "tools"),
        (4, "tools"),
        (5, "defer_loading"),
        (6, "model_settings"),
        (8, "body"),
    ]
    assert "'get_weather'" in found[3][2] and "'get_rain'" in found[4][2]
    assert "did you mean 'description'?" in found[2][2]


def test_the_first_problem_still_reads_as_the_error_and_its_string_lists_them_all() -> None:
    with pytest.raises(SkillParseError) as caught:
        parse_skill("---\nid: Bad Id\n---\nBody.\n")

    assert (caught.value.line, caught.value.field) == (1, "description")
    assert str(caught.value).splitlines() == [
        "line 1, field 'description': the required key 'description' is missing",
        f"line 2, field 'id': {caught.value.errors[1].message}",
    ]


def test_a_single_problem_is_a_list_of_one() -> None:
    with pytest.raises(SkillParseError) as caught:
        parse_skill(
            "---\nid: weather\ndescription: Use for weather.\ntools: [nope]\n---\n", known_tools=set()
        )

    assert [(e.line, e.field) for e in caught.value.errors] == [(4, "tools")]


def test_a_bundle_lists_every_problem_of_every_file() -> None:
    files = {
        "a.md": "---\nid: A\n---\n",
        "b.md": "---\nid: b\ndescription: Use for b.\ntools: [x, y]\n---\n",
    }

    with pytest.raises(SkillBundleError) as caught:
        parse_skill_files(files, known_tools=KNOWN_TOOLS)

    assert [(e.filename, e.line, e.field) for e in caught.value.errors] == [
        ("a.md", 1, "description"),
        ("a.md", 2, "id"),
        ("b.md", 4, "tools"),
        ("b.md", 4, "tools"),
    ]
