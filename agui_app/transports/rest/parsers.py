"""JSON request bodies of the REST views, parsed with orjson and held to what can be stored.

DRF's own ``JSONParser`` uses the standard library, which recurses once per nesting level: a body
nested 2,000 deep raised ``RecursionError`` (a 500). orjson refuses more than 1,024 levels by itself,
and ``check_json_input`` then refuses more than ``AGUI_JSON_MAX_DEPTH`` and any NUL character
(PostgreSQL cannot store U+0000 in text or jsonb), so no view sees such a body.
"""

from __future__ import annotations

from typing import Any

import orjson
from django.conf import settings
from rest_framework.parsers import BaseParser
from rest_framework.renderers import JSONRenderer

from agui_app.transports.inputs import check_json_input, parse_json


class JsonParser(BaseParser):
    media_type = "application/json"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        data = parse_json(stream.read() if stream is not None else b"")
        check_json_input(data, max_depth=settings.AGUI_JSON_MAX_DEPTH)
        return data


class JsonPatchParser(JsonParser):
    media_type = "application/json-patch+json"


class OrjsonRenderer(JSONRenderer):
    """DRF's ``JSONRenderer`` through orjson, for answers that carry a whole state document (a
    1 MB state took the standard library ~10 ms to encode on every ``PATCH``)."""

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None
    ) -> bytes:
        return b"" if data is None else orjson.dumps(data)
