"""Benchmark: peak memory of the copy-doubling JSON Patch (finding 1 of the hardening issue), and
what the budget costs a small patch on a large state.

Run ``python -m bench.patch_budget [--copies N ...]``; prints a JSON object. ``unbounded`` applies
the patch as the state service did before the budgets (all ops, then one size check); ``metered``
as it does now (``agui_app.state.budget``, the default limits). Peaks are ``tracemalloc``'s.
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc
from typing import Any

import orjson

from agui_app.state.budget import PatchBudget, PatchBudgetExceeded, PatchMeter
from agui_app.state.patching import apply_patch_in_place

BUDGET = PatchBudget(max_bytes=4 * 2**20, max_work_bytes=16 * 2**20, max_containers=200_000)


def doubling(copies: int) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = [{"op": "add", "path": "/seed", "value": "x" * 60_000}]
    return ops + [{"op": "copy", "from": "", "path": f"/c{i}"} for i in range(copies)]


def peak(copies: int, *, metered: bool) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    tracemalloc.start()
    try:
        try:
            meter = PatchMeter(BUDGET, doc) if metered else None
            result = apply_patch_in_place(doc, doubling(copies), before=meter)
            outcome = f"applied: {len(orjson.dumps(result))} bytes"  # the old size check, after all ops
        except PatchBudgetExceeded as exc:
            outcome = f"refused: {exc}"
        return {"peak_mib": round(tracemalloc.get_traced_memory()[1] / 2**20, 1), "outcome": outcome}
    finally:
        tracemalloc.stop()


def small_patch_ms(*, metered: bool, rounds: int = 20) -> float:
    doc = {"todos": [{"text": f"item {i}", "done": False, "tags": ["a", "b"]} for i in range(20_000)]}
    best = float("inf")
    for _ in range(rounds):
        ops = [{"op": "add", "path": "/todos/-", "value": {"text": "new", "done": False}}]
        started = time.perf_counter()
        apply_patch_in_place(doc, ops, before=PatchMeter(BUDGET, doc) if metered else None)
        len(orjson.dumps(doc))
        best = min(best, time.perf_counter() - started)
        doc["todos"].pop()
    return round(best * 1000, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--copies", type=int, nargs="*", default=[10, 12])
    parser.add_argument("--metered-copies", type=int, default=17)
    args = parser.parse_args()
    report = {f"unbounded_{n}_copies": peak(n, metered=False) for n in args.copies}
    report[f"metered_{args.metered_copies}_copies"] = peak(args.metered_copies, metered=True)
    report["small_patch_on_1mb_state_ms"] = {
        "unbounded": small_patch_ms(metered=False),
        "metered": small_patch_ms(metered=True),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
