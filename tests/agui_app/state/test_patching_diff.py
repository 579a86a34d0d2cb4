"""agui_app.patching.diff, checked against jsonpatch as the oracle, with exact JSON types."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_app.state.patching import diff, validate_patch
from tests.support.json_docs import JSON_VALUES, KEYS, confusable, tagged


@st.composite
def edited(draw: st.DrawFn, value: Any, depth: int = 0) -> Any:
    """``value`` changed copy-on-write style: untouched subtrees are the very same objects."""
    action = draw(st.sampled_from(["keep", "keep", "replace", "confuse", "descend", "descend"]))
    if action == "keep":
        return value
    if action == "replace":
        return draw(JSON_VALUES)
    if action == "confuse" or type(value) not in (dict, list):
        return draw(st.sampled_from(confusable(value)))
    if type(value) is dict:
        result = {
            key: draw(edited(item, depth + 1)) for key, item in value.items() if draw(st.integers(0, 4))
        }
        for key in draw(st.lists(KEYS, max_size=2)):
            result[key] = draw(JSON_VALUES)
        return result
    items = [draw(edited(item, depth + 1)) for item in value]
    for _ in range(draw(st.integers(0, 2))):
        if items and draw(st.booleans()):
            del items[draw(st.integers(0, len(items) - 1))]
        else:
            items.insert(draw(st.integers(0, len(items))), draw(JSON_VALUES))
    return items


@st.composite
def old_and_new(draw: st.DrawFn) -> tuple[Any, Any]:
    old = draw(JSON_VALUES)
    return old, draw(edited(old))


def assert_diff_applies(old: Any, new: Any) -> list[dict[str, Any]]:
    before = tagged(old)
    ops = diff(old, new)
    assert tagged(jsonpatch.apply_patch(old, ops)) == tagged(new)
    assert tagged(old) == before, "diff must not modify its inputs"
    return ops


@settings(max_examples=400, deadline=None)
@given(old_and_new())
def test_jsonpatch_turns_old_into_new_with_exact_types_when_trees_share_subtrees(
    pair: tuple[Any, Any],
) -> None:
    assert_diff_applies(*pair)


@settings(max_examples=200, deadline=None)
@given(old_and_new())
def test_jsonpatch_turns_old_into_new_with_exact_types_when_nothing_is_shared(pair: tuple[Any, Any]) -> None:
    old, new = pair
    assert_diff_applies(copy.deepcopy(old), new)


@settings(max_examples=150, deadline=None)
@given(JSON_VALUES, JSON_VALUES)
def test_jsonpatch_turns_any_document_into_any_other(old: Any, new: Any) -> None:
    assert_diff_applies(old, new)


@settings(max_examples=100, deadline=None)
@given(old_and_new())
def test_the_ops_pass_validation_and_an_identical_document_gives_no_ops(pair: tuple[Any, Any]) -> None:
    old, new = pair
    validate_patch(diff(old, new))
    assert diff(old, copy.deepcopy(old)) == []
    assert diff(new, new) == []


def test_it_reports_changes_that_python_equality_hides() -> None:
    old = {"x": 1, "y": [1, 2], "z": 0.0, "w": False}
    new = {"x": True, "y": [1.0, 2], "z": -0.0, "w": 0}

    ops = assert_diff_applies(old, new)

    assert ops == [
        {"op": "replace", "path": "/x", "value": True},
        {"op": "replace", "path": "/y/0", "value": 1.0},
        {"op": "replace", "path": "/z", "value": -0.0},
        {"op": "replace", "path": "/w", "value": 0},
    ]


def test_it_escapes_tilde_and_slash_in_keys_as_json_pointer_requires() -> None:
    old = {"a/b": 1, "m~n": 1, "~1": 1, "/~": {"x": 1}, "日本": 1}
    new = {"a/b": 2, "m~n": 2, "~1": 2, "/~": {"x": 2}, "日本": 2}

    paths = [op["path"] for op in assert_diff_applies(old, new)]

    assert paths == ["/a~1b", "/m~0n", "/~01", "/~1~0/x", "/日本"]


def test_it_removes_missing_keys_first_then_changes_and_adds_in_new_key_order() -> None:
    ops = assert_diff_applies({"gone": 1, "kept": 1, "changed": 1}, {"new": 1, "changed": 2, "kept": 1})

    assert ops == [
        {"op": "remove", "path": "/gone"},
        {"op": "add", "path": "/new", "value": 1},
        {"op": "replace", "path": "/changed", "value": 2},
    ]


def test_it_appends_with_dash_and_shortens_lists_from_the_end() -> None:
    assert assert_diff_applies([1, 2], [1, 3, 4, 5]) == [
        {"op": "replace", "path": "/1", "value": 3},
        {"op": "add", "path": "/-", "value": 4},
        {"op": "add", "path": "/-", "value": 5},
    ]
    assert assert_diff_applies([1, 2, 3, 4], [0, 2]) == [
        {"op": "replace", "path": "/0", "value": 0},
        {"op": "remove", "path": "/3"},
        {"op": "remove", "path": "/2"},
    ]


def test_it_replaces_the_root_when_its_type_changes() -> None:
    assert assert_diff_applies({"a": 1}, [1]) == [{"op": "replace", "path": "", "value": [1]}]
    assert assert_diff_applies([1], "x") == [{"op": "replace", "path": "", "value": "x"}]
    assert assert_diff_applies(1, 1.0) == [{"op": "replace", "path": "", "value": 1.0}]


def test_it_recurses_into_empty_and_nested_containers() -> None:
    assert_diff_applies({"a": [], "b": {}}, {"a": [[]], "b": {"c": {}}})
    assert_diff_applies([[1, [2, [3]]]], [[1, [2, [4]]]])


def test_it_returns_one_op_for_one_changed_leaf_of_a_1mb_document_sharing_the_rest() -> None:
    old = {
        "meta": {"title": "x"},
        "todos": [
            {"id": number, "title": "t" * 150, "done": False, "tags": ["a", "b"]} for number in range(5000)
        ],
    }
    todos = list(old["todos"])  # copy-on-write: copy only the containers on the changed path
    todos[1234] = {**todos[1234], "done": True}
    new = {**old, "todos": todos}

    ops = diff(old, new)

    assert len(jsonpatch.json.dumps(old)) > 1_000_000
    assert ops == [{"op": "replace", "path": "/todos/1234/done", "value": True}]


def test_it_handles_documents_deeper_than_the_recursion_limit() -> None:
    old: Any = "leaf"
    for _ in range(5000):
        old = [old]
    new: Any = "changed"
    for _ in range(5000):
        new = [new]

    ops = diff(old, new)

    assert ops == [{"op": "replace", "path": "/0" * 5000, "value": "changed"}]
