"""Benchmark: STATE_DELTA generation and application for thread state, ours vs jsonpatch.

Run ``python -m bench.state [--quick]``; prints a JSON object of medians (ms) and byte counts.
Documents are deterministic (seeded) synthetic states: todo-like objects, a plan, nested settings.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import jsonpatch
import orjson

from agui_app.state.cow import CowDocument
from agui_app.state.patching import apply_patch_in_place

SIZES = {"1kb": 1_000, "100kb": 100_000, "1mb": 1_000_000}
_WORDS = (
    "plan draft review ship fix test deploy refactor measure write read call agent tool state sync".split()
)


def _sentence(rnd: random.Random, words: int) -> str:
    return " ".join(rnd.choice(_WORDS) for _ in range(words))


def _todo(rnd: random.Random, number: int) -> dict[str, Any]:
    return {
        "id": f"todo-{number:05d}",
        "title": _sentence(rnd, rnd.randint(3, 8)).capitalize(),
        "done": rnd.random() < 0.4,
        "priority": rnd.randint(1, 5),
        "estimate_h": round(rnd.uniform(0.25, 16.0), 2),
        "tags": rnd.sample(_WORDS, rnd.randint(0, 3)),
        "owner": {"name": rnd.choice(["ada", "bob", "cyd", "dee"]), "team": rnd.choice(["core", "ui", "ml"])},
        "notes": _sentence(rnd, rnd.randint(0, 20)),
    }


def make_state(target_bytes: int, seed: int = 7) -> dict[str, Any]:
    """A state of about ``target_bytes`` bytes of compact JSON (at least a few todos)."""
    rnd = random.Random(seed)
    state: dict[str, Any] = {
        "thread": {
            "id": "thr-1",
            "title": "Quarterly planning",
            "settings": {"model": "m", "temperature": 0.2},
        },
        "plan": {
            "status": "running",
            "steps": [{"name": _sentence(rnd, 3), "status": "pending"} for _ in range(3)],
        },
        "counters": {"edits": 0, "tool_calls": 0},
        "todos": [],
    }
    size = len(orjson.dumps(state))
    while size < target_bytes or len(state["todos"]) < 2:
        todo = _todo(rnd, len(state["todos"]))
        state["todos"].append(todo)
        size += len(orjson.dumps(todo)) + 1
    return state


def _median_ms(samples_ns: list[int]) -> float:
    return round(statistics.median(samples_ns) / 1e6, 4)


def _time(action: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``action`` in ms over ``repeat`` runs (GC paused while timing)."""
    samples = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeat):
            start = time.perf_counter_ns()
            action()
            samples.append(time.perf_counter_ns() - start)
    finally:
        gc.enable()
    return _median_ms(samples)


def _small_change(view: Any, position: int, new_todo: dict[str, Any]) -> None:
    """The measured agent edit: one leaf replace and one list append."""
    todos = view["todos"]
    todo = todos[position % len(todos)]
    todo["done"] = not todo["done"]
    todos.append(new_todo)


def _bench_size(label: str, target: int, repeat: int, slow_repeat: int) -> dict[str, float]:
    state = make_state(target)
    rnd = random.Random(1)
    results: dict[str, float] = {f"doc_{label}_bytes": len(orjson.dumps(state))}

    # Edits are generated up front so that only the proxy writes and the commit are timed.
    edits = iter([(rnd.randrange(10**6), _todo(rnd, 10**5 + number)) for number in range(2 * repeat)])
    doc = CowDocument(state)

    def cow_delta() -> None:
        _small_change(doc.view, *next(edits))
        doc.commit()

    results[f"delta_{label}_ms"] = _time(cow_delta, repeat)

    samples = []  # the commit (the diff) alone, after an untimed edit
    for _ in range(repeat):
        _small_change(doc.view, *next(edits))
        start = time.perf_counter_ns()
        doc.commit()
        samples.append(time.perf_counter_ns() - start)
    results[f"commit_only_{label}_ms"] = _median_ms(samples)

    old = copy.deepcopy(state)
    new = copy.deepcopy(state)
    new["todos"][3 % len(new["todos"])]["done"] ^= True
    new["todos"].append(_todo(rnd, 99_999))
    results[f"make_patch_{label}_ms"] = _time(lambda: jsonpatch.make_patch(old, new), slow_repeat)

    patch = [
        {"op": "replace", "path": "/todos/1/done", "value": True},
        {"op": "add", "path": "/todos/-", "value": _todo(rnd, 77_777)},
    ]
    target_doc = copy.deepcopy(state)
    results[f"apply_ours_{label}_ms"] = _time(lambda: apply_patch_in_place(target_doc, patch), repeat)
    results[f"apply_jsonpatch_{label}_ms"] = _time(lambda: jsonpatch.apply_patch(state, patch), slow_repeat)
    return results


def _wire_bytes(edits: int) -> dict[str, float]:
    """Bytes sent for ``edits`` small agent edits of a 100 KB state: deltas vs full snapshots."""
    rnd = random.Random(3)
    doc = CowDocument(make_state(100_000))
    deltas = snapshots = 0
    for number in range(edits):
        view = doc.view
        todos = view["todos"]
        kind = number % 5
        if kind == 0:
            todos[rnd.randrange(len(todos))]["done"] = True
        elif kind == 1:
            todos[rnd.randrange(len(todos))]["title"] = _sentence(rnd, 5)
        elif kind == 2:
            todos.append(_todo(rnd, 50_000 + number))
        elif kind == 3:
            view["counters"]["edits"] += 1
        else:
            view["plan"]["steps"][number % 3]["status"] = rnd.choice(["pending", "running", "done"])
        delta = doc.commit()
        deltas += len(orjson.dumps({"type": "STATE_DELTA", "delta": delta}))
        snapshots += len(orjson.dumps({"type": "STATE_SNAPSHOT", "snapshot": doc.root}))
    return {
        "wire_edits": edits,
        "wire_bytes_deltas": deltas,
        "wire_bytes_snapshots": snapshots,
        "wire_ratio": round(snapshots / deltas, 1),
    }


def run(quick: bool = False) -> dict[str, Any]:
    """Runs every measurement once, side by side; ``quick`` uses fewer repetitions (< 15 s)."""
    repeat, slow_repeat = (7, 3) if quick else (25, 7)
    results: dict[str, Any] = {"quick": quick, "repeat": repeat, "slow_repeat": slow_repeat}
    for label, target in SIZES.items():
        results.update(_bench_size(label, target, repeat, slow_repeat))
    for label in SIZES:
        results[f"delta_vs_make_patch_{label}"] = round(
            results[f"make_patch_{label}_ms"] / results[f"delta_{label}_ms"], 1
        )
        results[f"apply_jsonpatch_vs_ours_{label}"] = round(
            results[f"apply_jsonpatch_{label}_ms"] / results[f"apply_ours_{label}_ms"], 1
        )
    results["delta_vs_make_patch"] = results["delta_vs_make_patch_1mb"]
    results.update(_wire_bytes(100))
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (finishes in < 15 s)")
    print(json.dumps(run(quick=parser.parse_args().quick), indent=2))
