"""agui_app.cow.CowDocument: proxy writes, copy-on-write sharing, commits replayed with jsonpatch."""

from __future__ import annotations

import copy
import datetime
import threading
from collections.abc import MutableMapping, MutableSequence
from typing import Any

import jsonpatch
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_app.state.cow import CowDocument, DictProxy, ListProxy, StaleProxyError
from tests.support.json_docs import JSON_VALUES, KEYS, tagged


def state() -> dict[str, Any]:
    return {
        "thread": {"title": "plan", "settings": {"model": "m"}},
        "todos": [{"id": n, "done": False, "tags": ["a"]} for n in range(10)],
        "counters": {"edits": 0},
    }


def at(root: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        root = root[part]
    return root


def containers(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    items = value.items() if type(value) is dict else enumerate(value) if type(value) is list else ()
    for key, item in items:
        if type(item) in (dict, list):
            found += containers(item, (*path, key))
    return found


def mutate(doc: CowDocument, model: dict[str, Any], data: st.DataObject) -> None:
    """One random write, made through the proxy and, with plain Python, to the model."""
    path = data.draw(st.sampled_from(containers(model)))
    proxy, plain = at(doc.view, path), at(model, path)
    source = data.draw(st.sampled_from(containers(model)))
    # Assigning a proxy shares its node; the model gets a copy (value semantics). Only small sources,
    # as assigning a container into itself doubles the document each time.
    if data.draw(st.booleans()) and len(orjson.dumps(at(model, source))) < 300:
        value, plain_value = at(doc.view, source), copy.deepcopy(at(model, source))
    else:
        value = data.draw(JSON_VALUES)
        plain_value = copy.deepcopy(value)
    if type(plain) is dict:
        action = data.draw(st.sampled_from(["set", "del", "pop", "update", "setdefault", "clear", "popitem"]))
        key = data.draw(st.sampled_from(list(plain)) if plain and data.draw(st.booleans()) else KEYS)
        if action == "set":
            proxy[key], plain[key] = value, plain_value
        elif action in ("del", "pop") and key in plain:
            if action == "del":
                del proxy[key], plain[key]
            else:
                assert tagged(proxy.pop(key)) == tagged(plain.pop(key))
        elif action == "update":
            proxy.update({key: value}, extra=1)
            plain.update({key: plain_value}, extra=1)
        elif action == "setdefault":
            proxy.setdefault(key, value)
            plain.setdefault(key, plain_value)
        elif action == "clear":
            proxy.clear(), plain.clear()
        elif action == "popitem" and plain:
            assert tagged(proxy.popitem()) == tagged(plain.popitem())
        return
    action = data.draw(
        st.sampled_from(["append", "insert", "set", "del", "pop", "extend", "slice", "reverse"])
    )
    index = data.draw(st.integers(-len(plain), max(len(plain) - 1, 0)))
    if action == "append":
        proxy.append(value), plain.append(plain_value)
    elif action == "insert":
        proxy.insert(index, value), plain.insert(index, plain_value)
    elif action == "extend":
        proxy.extend([value, 1]), plain.extend([plain_value, 1])
    elif action == "slice":
        proxy[index:] = [value]
        plain[index:] = [plain_value]
    elif action == "reverse":
        proxy.reverse(), plain.reverse()
    elif plain and action == "set":
        proxy[index], plain[index] = value, plain_value
    elif plain and action == "del":
        del proxy[index], plain[index]
    elif plain and action == "pop":
        assert tagged(proxy.pop(index)) == tagged(plain.pop(index))


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(KEYS, JSON_VALUES, max_size=5), st.data())
def test_commits_turn_the_baseline_into_the_root_with_jsonpatch_after_any_proxy_writes(
    start: dict[str, Any], data: st.DataObject
) -> None:
    doc, model = CowDocument(start), copy.deepcopy(start)
    for _ in range(data.draw(st.integers(1, 3))):
        baseline, baseline_bytes = doc.root, orjson.dumps(doc.root)
        # what a client holds: parsed JSON, so without the node sharing that copy.deepcopy would keep
        baseline_copy = orjson.loads(baseline_bytes)
        for _ in range(data.draw(st.integers(1, 6))):
            mutate(doc, model, data)
            assert orjson.dumps(doc.root) == orjson.dumps(model)  # same content, order and JSON types
        ops = doc.commit()
        assert orjson.dumps(baseline) == baseline_bytes, "the baseline must never be mutated"
        assert tagged(jsonpatch.apply_patch(baseline_copy, ops)) == tagged(doc.root)


def test_a_write_copies_only_the_containers_on_its_path() -> None:
    doc = CowDocument(state())
    baseline = doc.root

    doc.view["todos"][5]["done"] = True

    root = doc.root
    assert root is not baseline and root["todos"] is not baseline["todos"]
    assert root["todos"][5] is not baseline["todos"][5]
    assert root["thread"] is baseline["thread"] and root["counters"] is baseline["counters"]
    assert all(root["todos"][n] is baseline["todos"][n] for n in range(10) if n != 5)
    assert root["todos"][5]["tags"] is baseline["todos"][5]["tags"]
    assert baseline["todos"][5]["done"] is False


def test_containers_copied_since_the_last_commit_are_written_in_place() -> None:
    doc = CowDocument(state())
    doc.view["todos"][5]["done"] = True
    todos, todo = doc.root["todos"], doc.root["todos"][5]

    doc.view["todos"][5]["id"] = 50
    doc.view["todos"].append({"id": 10})

    assert doc.root["todos"] is todos and doc.root["todos"][5] is todo


def test_a_commit_freezes_the_root_so_the_next_write_copies_again() -> None:
    doc = CowDocument(state())
    doc.view["counters"]["edits"] = 1
    assert doc.commit() == [{"op": "replace", "path": "/counters/edits", "value": 1}]
    committed = doc.root

    doc.view["counters"]["edits"] = 2

    assert committed["counters"]["edits"] == 1 and doc.root["counters"]["edits"] == 2
    assert doc.commit() == [{"op": "replace", "path": "/counters/edits", "value": 2}]
    assert doc.commit() == []


def test_a_snapshot_never_changes_after_later_writes() -> None:
    doc = CowDocument(state())
    doc.view["counters"]["edits"] = 1
    snapshot = doc.snapshot()
    frozen = orjson.dumps(snapshot)

    doc.view["counters"]["edits"] = 2
    doc.view["todos"].append({"id": 10})

    assert orjson.dumps(snapshot) == frozen and doc.root["counters"]["edits"] == 2


def test_a_small_change_to_a_1mb_state_commits_two_ops_and_shares_every_untouched_subtree() -> None:
    big = {"meta": {"v": 1}, "todos": [{"id": n, "title": "t" * 170, "done": False} for n in range(5000)]}
    doc = CowDocument(big)
    assert len(orjson.dumps(doc.root)) > 1_000_000
    for n in range(5):
        before = doc.root
        doc.view["todos"][n]["done"] = True
        doc.view["todos"].append({"id": 5000 + n})
        ops = doc.commit()
        assert ops == [
            {"op": "replace", "path": f"/todos/{n}/done", "value": True},
            {"op": "add", "path": "/todos/-", "value": {"id": 5000 + n}},
        ]
        # Only the path to the change was copied: the diff can skip everything else by identity.
        untouched = [i for i in range(5000) if i != n]
        assert all(doc.root["todos"][i] is before["todos"][i] for i in untouched)
        assert doc.root["meta"] is before["meta"]


def test_concurrent_writes_from_threads_are_all_kept() -> None:
    doc = CowDocument({"items": [], "by_thread": {}})
    baseline = orjson.loads(orjson.dumps(doc.root))
    barrier = threading.Barrier(8)

    def work(number: int) -> None:
        barrier.wait()
        for step in range(200):
            doc.view["items"].append({"thread": number, "step": step})
            doc.view["by_thread"][str(number)] = step

    threads = [threading.Thread(target=work, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(doc.root["items"]) == 1600
    assert doc.root["by_thread"] == {str(number): 199 for number in range(8)}
    assert tagged(jsonpatch.apply_patch(baseline, doc.commit())) == tagged(doc.root)


def test_a_proxy_whose_path_was_removed_raises_instead_of_writing_elsewhere() -> None:
    doc = CowDocument(state())
    todo, tags = doc.view["todos"][9], doc.view["todos"][9]["tags"]
    del doc.view["todos"][9]
    before = orjson.dumps(doc.root)

    with pytest.raises(StaleProxyError, match="stale proxy: /todos/9 no longer holds an object"):
        todo["done"] = True
    with pytest.raises(IndexError):
        tags.append("b")
    with pytest.raises(KeyError):
        todo.get("done")
    assert orjson.dumps(doc.root) == before


def test_a_proxy_whose_container_was_replaced_by_another_type_raises() -> None:
    doc = CowDocument(state())
    settings_proxy = doc.view["thread"]["settings"]
    doc.view["thread"]["settings"] = ["not", "an", "object"]

    with pytest.raises(StaleProxyError, match="/thread/settings no longer holds an object"):
        len(settings_proxy)


@pytest.mark.parametrize(
    "value",
    [
        {1, 2},
        (1, 2),
        datetime.date(2024, 1, 1),
        float("nan"),
        float("inf"),
        {1: "a"},
        object(),
        2**70,
        "\ud800",
    ],
)
def test_values_that_are_not_json_are_rejected_and_change_nothing(value: object) -> None:
    doc = CowDocument(state())
    before = orjson.dumps(doc.root)

    with pytest.raises(TypeError):
        doc.view["thread"]["bad"] = {"nested": [value]}
    with pytest.raises(TypeError):
        doc.view["todos"].append(value)

    assert orjson.dumps(doc.root) == before and doc.commit() == []


def test_object_keys_must_be_strings() -> None:
    with pytest.raises(TypeError, match="keys must be str"):
        CowDocument(state()).view[1] = "x"  # type: ignore[index]


def test_assigned_values_are_copied_so_later_changes_to_them_do_not_leak_in() -> None:
    doc = CowDocument(state())
    value = {"list": [1]}

    doc.view["new"] = value
    value["list"].append(2)

    assert doc.root["new"] == {"list": [1]}


def test_assigning_a_proxy_shares_its_node_but_keeps_value_semantics() -> None:
    doc = CowDocument(state())
    doc.view["thread"]["settings"]["model"] = "n"  # now owned (written in place until commit)

    doc.view["copy"] = doc.view["thread"]
    doc.view["copy"]["settings"]["model"] = "changed"
    doc.view["todos"][0] = doc.view["todos"][1]
    doc.view["todos"][0]["done"] = True

    assert doc.root["thread"]["settings"]["model"] == "n"
    assert doc.root["todos"][1]["done"] is False
    assert doc.root["copy"]["settings"]["model"] == "changed"


def test_a_proxy_of_another_document_is_copied_in() -> None:
    other = CowDocument({"x": {"y": [1]}})
    doc = CowDocument(state())

    doc.view["from_other"] = other.view["x"]
    other.view["x"]["y"].append(2)

    assert doc.root["from_other"] == {"y": [1]}


def test_proxies_behave_like_the_dicts_and_lists_they_wrap() -> None:
    doc = CowDocument(state())
    view, todos = doc.view, doc.view["todos"]

    assert isinstance(view, MutableMapping) and isinstance(todos, MutableSequence)
    assert isinstance(todos[0], DictProxy) and isinstance(todos[0]["tags"], ListProxy)
    assert view["thread"] == {"title": "plan", "settings": {"model": "m"}} and len(todos) == 10
    assert "todos" in view and "nope" not in view and view.get("nope", 1) == 1
    assert (
        todos[-1]["id"] == 9 and todos[2:4] == [todos[2], todos[3]] and [t["id"] for t in todos][:2] == [0, 1]
    )
    assert {"id": 3, "done": False, "tags": ["a"]} in todos and todos.index(todos[4]) == 4
    assert repr(view["counters"]) == "DictProxy('/counters', {'edits': 0})"

    plain = view.copy()
    plain["todos"].clear()
    todos[8:] = [{"id": 80}]
    todos.remove({"id": 0, "done": False, "tags": ["a"]})
    todos.sort(key=lambda todo: -todo["id"])
    todos += [{"id": 99}]
    view.setdefault("counters", {})["edits"] += 1

    assert [todo["id"] for todo in doc.root["todos"]] == [80, 7, 6, 5, 4, 3, 2, 1, 99]
    assert doc.root["counters"] == {"edits": 1}
    assert doc.to_plain() == doc.root and doc.to_plain() is not doc.root


def test_popped_values_are_plain_copies_that_cannot_reach_the_baseline() -> None:
    doc = CowDocument(state())
    baseline = doc.root

    popped = doc.view["todos"].pop(0)
    popped["tags"].append("mutated")

    assert baseline["todos"][0] == {"id": 0, "done": False, "tags": ["a"]}


def test_reset_replaces_baseline_and_root() -> None:
    doc = CowDocument(state())
    doc.view["counters"]["edits"] = 5

    doc.reset({"fresh": True})

    assert doc.root == {"fresh": True} and doc.commit() == []
    with pytest.raises(TypeError):
        doc.reset([1])  # type: ignore[arg-type]


def test_rebase_replays_changes_made_after_the_last_commit_onto_the_new_base() -> None:
    doc = CowDocument({"todos": [{"text": "a"}], "n": 1})
    doc.view["todos"].append({"text": "b"})
    committed = doc.commit()
    doc.view["todos"].append({"text": "c"})  # a parallel tool, while the commit is being stored
    stored = {"todos": [{"text": "a"}, {"text": "b"}], "n": 1, "client": True}  # someone else wrote too
    assert doc.rebase(stored) == []
    assert committed == [{"op": "add", "path": "/todos/-", "value": {"text": "b"}}]
    assert doc.root == {"todos": [{"text": "a"}, {"text": "b"}, {"text": "c"}], "n": 1, "client": True}
    assert stored == {
        "todos": [{"text": "a"}, {"text": "b"}],
        "n": 1,
        "client": True,
    }  # the base is shared, not mutated
    assert doc.commit() == [{"op": "add", "path": "/todos/-", "value": {"text": "c"}}]


def test_rebase_drops_changes_that_no_longer_apply_and_reports_them() -> None:
    doc = CowDocument({"todos": [{"done": False}]})
    doc.commit()
    doc.view["todos"][0]["done"] = True
    dropped = doc.rebase({"todos": []})
    assert dropped == [{"op": "replace", "path": "/todos/0/done", "value": True}]
    assert doc.root == {"todos": []} and doc.commit() == []
