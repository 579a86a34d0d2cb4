"""A unified diff applied to a document's lines (what ``demo`` does with a skill's edit script)."""

from __future__ import annotations

import re

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")


def apply_unified_diff(lines: list[str], diff: str) -> list[str]:
    """``lines`` changed by a unified diff (``---``/``+++`` headers, ``@@`` hunks)."""
    result: list[str] = []
    position = 0  # index in ``lines`` of the next line not yet copied
    for line in diff.strip("\n").split("\n"):
        if line.startswith(("--- ", "+++ ")):
            continue
        if hunk := HUNK.match(line):
            start = max(int(hunk.group(1)) - 1, 0) if hunk.group(2) != "0" else int(hunk.group(1))
            result.extend(lines[position:start])
            position = start
        elif line.startswith("+"):
            result.append(line[1:])
        elif line.startswith("-"):
            position += 1
        elif line.startswith(" "):
            result.append(lines[position] if position < len(lines) else line[1:])
            position += 1
    return result + lines[position:]
