"""How JSON documents come back from the database.

PostgreSQL's ``jsonb`` keeps numbers exact: a client's ``1e19`` (a double) is stored as the numeric
10000000000000000000 and comes back as a Python integer past the 64-bit range, which the event
encoder (orjson) cannot write — the next write or snapshot of that state would fail. Integers
outside the signed/unsigned 64-bit range are read back as floats, which is what every JSON client
(JavaScript included) reads them as anyway. SQLite stores the text as given, so it reads the same.
"""

from __future__ import annotations

import json
from typing import Any

INT_MIN = -(2**63)
INT_MAX = 2**64 - 1  # orjson writes up to unsigned 64-bit


def int_or_float(text: str) -> int | float:
    if len(text) <= 18:  # fits for certain: no conversion cost on the common path
        return int(text)
    value = int(text)
    return value if INT_MIN <= value <= INT_MAX else float(value)


class StoredJsonDecoder(json.JSONDecoder):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("parse_int", int_or_float)
        super().__init__(*args, **kwargs)
