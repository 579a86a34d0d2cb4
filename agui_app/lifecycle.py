"""Where this process is in its life: serving, or draining after SIGTERM (no new run admitted), and
then closing its followers. Flags only (``runtime.shutdown`` drives them), so every layer can read
them without importing the runtime."""

from __future__ import annotations

import threading

from django.conf import settings

from agui_app.errors import TooManyRequests

_draining = threading.Event()
_closing_followers = threading.Event()


class ShuttingDown(TooManyRequests):
    """503: this process stops admitting runs; another process (or this one restarted) will.
    A ``TooManyRequests`` so every transport sends its ``Retry-After``."""

    status = 503
    code = "shutting_down"

    @property
    def retry_after(self) -> int:  # type: ignore[override]  # read-only here: the setting decides it
        return max(1, int(settings.AGUI_SHUTDOWN_RETRY_AFTER_SECONDS))


def draining() -> bool:
    return _draining.is_set()


def followers_closing() -> bool:
    return _closing_followers.is_set()


def begin_draining() -> None:
    _draining.set()


def close_followers() -> None:
    _closing_followers.set()


def refuse_while_draining() -> None:
    """Raises ``ShuttingDown`` once the process drains."""
    if _draining.is_set():
        raise ShuttingDown("The server is shutting down; retry (another process takes the run).")


def reset() -> None:
    """Serving again (tests)."""
    _draining.clear()
    _closing_followers.clear()
