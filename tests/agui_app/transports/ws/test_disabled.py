"""With the WebSocket transport switched off, a handshake is answered 404 (never a 500)."""

from __future__ import annotations

from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture(params=["uvicorn", "daphne"])
def server_without_websocket(request: Any, transactional_db: None, tmp_path: Any) -> Any:
    from tests.support.servers import start_server

    started = start_server(tmp_path, server=request.param, extra_env={"AGUI_WEBSOCKET_ENABLED": "0"})
    yield request.param, started
    started.stop()


async def handshake_status(url: str, key: str) -> int:
    with pytest.raises(InvalidStatus) as refused:
        async with connect(url, additional_headers={"Authorization": f"Bearer {key}"}, proxy=None):
            pass
    return refused.value.response.status_code


async def test_a_websocket_connect_is_refused_not_500_when_the_transport_is_disabled(
    server_without_websocket: Any, owner_key: str
) -> None:
    kind, server = server_without_websocket
    url = server.url.replace("http://", "ws://") + "/ws/v1/threads/t1"
    # daphne offers no ASGI denial response: a refused handshake is its fixed 403.
    assert await handshake_status(url, owner_key) == (404 if kind == "uvicorn" else 403)
    assert "Traceback" not in server.log()


async def test_an_unknown_websocket_path_is_404(server: Any, owner_key: str) -> None:
    assert await handshake_status(server.url.replace("http://", "ws://") + "/ws/nowhere", owner_key) == 404
