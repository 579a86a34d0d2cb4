"""agui_app.state.patching: validate_patch and apply_patch_in_place (in place, atomic, RFC 6902 semantics)."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import jsonpointer
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_app.state.patching import PatchError, apply_patch_in_place, validate_patch
from agui_app.state.values import format_pointer
from tests.support.json_docs import JSON_VALUES, KEYS, confusable, tagged


def state() -> dict[str, Any]:
    return {
        "title": "plan",
        "todos": [{"id": 1, "done": False}, {"id": 2, "done": True}, {"id": 3, "done": False}],
        "meta": {"a": 1, "b": [1, 2], "c": {"d": None}},
    }


# --- in place -----------------------------------------------------------------------------------------


def test_it_mutates_the_given_document_and_keeps_untouched_subtrees_identical() -> None:
    doc = {"meta": {"v": 1}, "todos": [{"id": n, "text": "x" * 200} for n in range(5000)]}
    todos, meta, untouched = doc["todos"], doc["meta"], doc["todos"][10]

    result = apply_patch_in_place(
        doc,
        [
            {"op": "replace", "path": "/todos/3/text", "value": "y"},
            {"op": "add", "path": "/todos/-", "value": {"id": 5000}},
            {"op": "move", "from": "/todos/0", "path": "/todos/1"},
        ],
    )

    assert len(orjson.dumps(doc)) > 1_000_000
    assert result is doc and doc["todos"] is todos and doc["meta"] is meta and doc["todos"][10] is untouched
    assert doc["todos"][3]["text"] == "y" and doc["todos"][-1] == {"id": 5000}
    assert [todo["id"] for todo in doc["todos"][:3]] == [1, 0, 2]


def test_it_returns_a_new_root_only_when_an_op_targets_the_empty_path() -> None:
    doc = state()
    original = copy.deepcopy(doc)

    result = apply_patch_in_place(doc, [{"op": "replace", "path": "", "value": [1]}])

    assert result == [1] and doc == original


def test_it_copies_inserted_values_so_patch_and_document_share_nothing() -> None:
    value = {"nested": [1]}
    ops = [{"op": "add", "path": "/x", "value": value}, {"op": "copy", "from": "/x", "path": "/y"}]
    doc: dict[str, Any] = {}

    apply_patch_in_place(doc, ops)
    value["nested"].append(2)
    doc["y"]["nested"].append(3)

    assert doc == {"x": {"nested": [1]}, "y": {"nested": [1, 3]}}


def test_it_moves_values_without_copying_them() -> None:
    doc = state()
    moved = doc["meta"]["c"]

    apply_patch_in_place(doc, [{"op": "move", "from": "/meta/c", "path": "/todos/0/c"}])

    assert doc["todos"][0]["c"] is moved and "c" not in doc["meta"]


@pytest.mark.parametrize(
    ("path", "expected"),
    [("/todos/-", [1, 2, 3, 9]), ("/todos/3", [1, 2, 3, 9]), ("/todos/0", [9, 1, 2, 3])],
)
def test_add_inserts_into_arrays_at_an_index_or_at_the_end_with_dash(path: str, expected: list[int]) -> None:
    doc = state()

    apply_patch_in_place(doc, [{"op": "add", "path": path, "value": {"id": 9}}])

    assert [todo["id"] for todo in doc["todos"]] == expected


@pytest.mark.parametrize(
    ("op", "reason"),
    [
        ({"op": "add", "path": "/todos/4", "value": 0}, "path array index 4 is out of range (length 3)"),
        ({"op": "add", "path": "/todos/01", "value": 0}, "path has an invalid array index '01'"),
        ({"op": "replace", "path": "/todos/-", "value": 0}, "path has an invalid array index '-'"),
        ({"op": "remove", "path": "/todos/3"}, "path array index 3 is out of range (length 3)"),
        ({"op": "add", "path": "/title/x", "value": 0}, "path does not exist (its parent is a string)"),
        ({"op": "add", "path": "/nope/x", "value": 0}, "path does not exist"),
        ({"op": "replace", "path": "/nope", "value": 0}, "path does not exist"),
        ({"op": "remove", "path": ""}, "cannot remove the whole document"),
        (
            {"op": "move", "from": "/meta", "path": "/meta/c/e"},
            "cannot move a location into one of its own children",
        ),
        ({"op": "move", "from": "/nope", "path": "/x"}, "'from' does not exist"),
        ({"op": "copy", "from": "/todos/9", "path": "/x"}, "'from' array index 9 is out of range (length 3)"),
        ({"op": "test", "path": "/title", "value": "other"}, "test failed: the value at path differs"),
    ],
)
def test_it_rejects_ops_that_do_not_apply_and_says_why(op: dict[str, Any], reason: str) -> None:
    with pytest.raises(PatchError) as caught:
        apply_patch_in_place(state(), [op])

    assert caught.value.reason == reason
    assert caught.value.as_details() == {"index": 0, "op": op["op"], "path": op["path"], "reason": reason}


# --- atomicity ----------------------------------------------------------------------------------------

EARLIER_OPS = [
    {"op": "add", "path": "/new", "value": {"x": [1]}},
    {"op": "remove", "path": "/meta/a"},  # not the last key: its position must come back
    {"op": "replace", "path": "/todos/1/done", "value": False},
    {"op": "move", "from": "/todos/0", "path": "/todos/2"},
    {"op": "copy", "from": "/meta", "path": "/todos/0/meta"},
    {"op": "add", "path": "/meta/b/0", "value": 0},
    {"op": "remove", "path": "/meta/c"},  # the last key
    {"op": "add", "path": "/title", "value": "renamed"},
    {"op": "test", "path": "/todos/0/meta/b", "value": [1.0, 2]},
]
FAILING_OPS = {
    "add": {"op": "add", "path": "/todos/9", "value": 1},
    "remove": {"op": "remove", "path": "/meta/zzz"},
    "replace": {"op": "replace", "path": "/zzz", "value": 1},
    "move": {"op": "move", "from": "/todos", "path": "/todos/0"},
    "copy": {"op": "copy", "from": "/zzz", "path": "/x"},
    "test": {"op": "test", "path": "/todos/1/done", "value": 0},
    "malformed": {"op": "add", "path": "/x"},
    "non-JSON value": {"op": "add", "path": "/x", "value": {1, 2}},
}


@pytest.mark.parametrize("kind", list(FAILING_OPS))
def test_it_rolls_back_earlier_ops_byte_for_byte_when_a_later_op_fails(kind: str) -> None:
    doc = state()
    before, children = orjson.dumps(doc), {key: doc[key] for key in doc}
    todo_ids = [id(todo) for todo in doc["todos"]]

    with pytest.raises(PatchError) as caught:
        apply_patch_in_place(doc, [*EARLIER_OPS, FAILING_OPS[kind]])

    assert caught.value.index == len(EARLIER_OPS)
    assert str(caught.value).startswith(f"operation {len(EARLIER_OPS)} ({FAILING_OPS[kind]['op']} ")
    assert orjson.dumps(doc) == before
    assert all(doc[key] is child for key, child in children.items())
    assert [id(todo) for todo in doc["todos"]] == todo_ids


def test_the_earlier_ops_of_the_rollback_test_succeed_on_their_own() -> None:
    doc = state()
    result = apply_patch_in_place(doc, EARLIER_OPS)
    assert tagged(result) == tagged(jsonpatch.apply_patch(state(), EARLIER_OPS))


def test_it_rolls_back_ops_made_before_a_root_replacement() -> None:
    doc = state()
    before = orjson.dumps(doc)
    ops = [
        {"op": "remove", "path": "/title"},
        {"op": "move", "from": "/meta", "path": ""},
        {"op": "remove", "path": "/a"},
        {"op": "test", "path": "/b", "value": "nope"},
    ]

    with pytest.raises(PatchError, match="operation 3"):
        apply_patch_in_place(doc, ops)

    assert orjson.dumps(doc) == before


# --- test op semantics -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("actual", "tested", "passes"),
    [
        (1, 1.0, True),  # RFC 6902 4.6: numbers are equal when numerically equal
        (True, 1, False),  # ...but true is a literal, not the number 1
        (0, False, False),
        (None, False, False),
        ([1, {"a": 2}], [1.0, {"a": 2.0}], True),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),  # object member order does not matter
        ({"a": True}, {"a": 1}, False),
        ([1, 2], [2, 1], False),
        ("1", 1, False),
    ],
)
def test_test_compares_values_as_rfc_6902_does(actual: Any, tested: Any, passes: bool) -> None:
    patch = [{"op": "test", "path": "/v", "value": tested}]
    try:
        apply_patch_in_place({"v": actual}, patch)
        ours = True
    except PatchError:
        ours = False
    try:
        jsonpatch.apply_patch({"v": actual}, patch)
        theirs = True
    except jsonpatch.JsonPatchTestFailed:
        theirs = False
    assert ours is theirs is passes


# --- validate_patch ----------------------------------------------------------------------------------


def rejection(ops: object) -> PatchError:
    with pytest.raises(PatchError) as caught:
        validate_patch(ops)
    return caught.value


def test_validation_returns_normalized_copies_sharing_nothing_with_the_input() -> None:
    ops = [{"op": "add", "path": "/a", "value": {"b": [1]}}, {"op": "move", "from": "/a", "path": "/c"}]

    result = validate_patch(ops)
    result[0]["value"]["b"].append(2)

    assert result == [{"op": "add", "path": "/a", "value": {"b": [1, 2]}}, ops[1]]
    assert result[1] is not ops[1] and ops[0]["value"] == {"b": [1]}


def test_validation_rejects_a_patch_that_is_not_an_array() -> None:
    assert rejection({"op": "add"}).as_details() == {"reason": "a patch must be a JSON array of operations"}


def test_validation_rejects_an_operation_that_is_not_an_object() -> None:
    assert rejection([{"op": "remove", "path": "/a"}, "remove"]).as_details() == {
        "index": 1,
        "reason": "operation must be a JSON object",
    }


def test_validation_rejects_an_operation_without_op() -> None:
    error = rejection([{"path": "/a"}])
    assert error.as_details() == {"index": 0, "path": "/a", "reason": "missing member 'op'"}


def test_validation_rejects_an_unknown_op() -> None:
    error = rejection([{"op": "append", "path": "/a", "value": "x"}])
    assert (error.index, error.op, error.path, error.reason) == (0, "append", "/a", "unknown op 'append'")


def test_validation_rejects_a_missing_path() -> None:
    assert rejection([{"op": "remove"}]).as_details() == {
        "index": 0,
        "op": "remove",
        "reason": "missing member 'path'",
    }


@pytest.mark.parametrize("path", ["a/b", "/a~2", "/a~", 5, None])
def test_validation_rejects_a_path_that_is_not_a_json_pointer(path: object) -> None:
    error = rejection([{"op": "remove", "path": "/ok"}, {"op": "remove", "path": path}])
    assert error.index == 1 and error.reason == f"'path' is not a JSON Pointer: {path!r}"


def test_validation_rejects_a_move_without_from() -> None:
    error = rejection([{"op": "move", "path": "/a"}])
    assert str(error) == "operation 0 (move /a): missing member 'from'"


def test_validation_rejects_a_bad_from_pointer() -> None:
    error = rejection([{"op": "copy", "from": "x", "path": "/a"}])
    assert error.reason == "'from' is not a JSON Pointer: 'x'"


@pytest.mark.parametrize("kind", ["add", "replace", "test"])
def test_validation_rejects_a_missing_value(kind: str) -> None:
    assert rejection([{"op": kind, "path": "/a"}]).reason == "missing member 'value'"


def test_validation_rejects_unknown_members() -> None:
    error = rejection([{"op": "remove", "path": "/a", "value": 1}])
    assert str(error) == "operation 0 (remove /a): unknown member 'value' for op 'remove'"


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (float("nan"), "value is not JSON: float at /x is not finite (nan)"),
        (float("inf"), "value is not JSON: float at /x is not finite (inf)"),
        ({1: "a"}, "value is not JSON: object key 1 is not a string"),
        ((1, 2), "value is not JSON: tuple is not a JSON value"),
        (2**64, "value is not JSON: integer is outside the 64-bit range"),
        ("\ud800", "value is not JSON: string contains a lone surrogate"),
    ],
)
def test_validation_rejects_values_that_are_not_json(value: object, reason: str) -> None:
    wrapped = {"x": value} if isinstance(value, float) else value
    error = rejection([{"op": "add", "path": "", "value": wrapped}])
    assert error.as_details() == {"index": 0, "op": "add", "path": "", "reason": reason}


# --- equivalence with jsonpatch ----------------------------------------------------------------------


def pointers(value: Any, prefix: tuple[str | int, ...] = ()) -> tuple[list[str], list[str]]:
    """The locations in ``value``, and locations where an add could insert (new key, '-', the end)."""
    here = format_pointer(prefix)
    existing, insertable = [here], []
    children: Any = ()
    if type(value) is dict:
        insertable.append(format_pointer((*prefix, "new")))
        children = value.items()
    elif type(value) is list:
        insertable += [f"{here}/-", format_pointer((*prefix, len(value)))]
        children = enumerate(value)
    for key, item in children:
        more_existing, more_insertable = pointers(item, (*prefix, key))
        existing += more_existing
        insertable += more_insertable
    return existing, insertable


@st.composite
def doc_and_patch(draw: st.DrawFn) -> tuple[Any, list[dict[str, Any]]]:
    doc = draw(
        st.dictionaries(KEYS, JSON_VALUES, max_size=5) | st.lists(JSON_VALUES, max_size=5) | JSON_VALUES
    )
    real, new = pointers(doc)
    existing, insertable = st.sampled_from(real), st.sampled_from(new or real)
    made_up = KEYS.map(lambda key: "/" + key.replace("~", "~0"))
    # mostly locations of the original document (earlier ops may have removed them), some made up
    locations = st.one_of(existing, existing, existing, made_up)
    ops = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["add", "remove", "replace", "move", "copy", "test"]))
        target = st.one_of(locations, insertable) if kind in ("add", "move", "copy") else locations
        op: dict[str, Any] = {"op": kind, "path": draw(target)}
        if kind in ("move", "copy"):
            op["from"] = draw(locations)
        if kind in ("add", "replace"):
            op["value"] = draw(JSON_VALUES)
        if kind == "test":
            # mostly the current value (or one that Python's == would confuse with it)
            actual = jsonpointer.resolve_pointer(doc, op["path"], None)
            if actual is None or isinstance(actual, jsonpointer.EndOfList):
                op["value"] = draw(JSON_VALUES)
            else:
                op["value"] = draw(st.sampled_from([actual, actual, *confusable(actual)]))
        ops.append(op)
    return doc, ops


@settings(max_examples=500, deadline=None)
@given(doc_and_patch())
def test_it_agrees_with_jsonpatch_on_random_patches(case: tuple[Any, list[dict[str, Any]]]) -> None:
    doc, ops = case
    validate_patch(ops)
    try:
        expected = jsonpatch.apply_patch(doc, ops)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException):
        expected = PatchError
    ours, before = copy.deepcopy(doc), orjson.dumps(doc)

    if expected is PatchError:
        with pytest.raises(PatchError):
            apply_patch_in_place(ours, ops)
        assert orjson.dumps(ours) == before
    else:
        result = apply_patch_in_place(ours, ops)
        assert tagged(result) == tagged(expected)
        if all(op["path"] != "" for op in ops) and type(doc) in (dict, list):
            assert result is ours
