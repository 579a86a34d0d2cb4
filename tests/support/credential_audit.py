"""No log line of the suite holds a key or a token it created.

Every API key (``ApiKey.generate``) and user token (``jwt.encode``) made while the suite runs is
recorded; every log record emitted in the test process is checked as it is handled — its message,
its ``extra`` fields and its traceback — for the credentials of the running test (whole key, or its
secret part) and for any key- or token-shaped string the suite ever created. ``conftest`` fails the
test during which a leak happened. (Server subprocesses log to their own files: not covered here.)
"""

from __future__ import annotations

import logging
import re
from typing import Any

import jwt

from agui_app.logs import fields_of
from agui_app.models import ApiKey

CREDENTIAL_SHAPE = re.compile(
    r"agui_[0-9a-f]+_[A-Za-z0-9_\-]+|eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+"
)
_plain = logging.Formatter()


class CredentialAudit:
    def __init__(self) -> None:
        self.ever: set[str] = set()
        self.current: set[str] = set()
        self.leaks: list[str] = []

    def created(self, credential: str) -> None:
        self.ever.add(credential)
        self.current.add(credential)
        if credential.startswith("agui_"):
            secret = credential.split("_", 2)[2]  # agui_<hex prefix>_<secret>: the secret alone
            if len(secret) >= 16:
                self.current.add(secret)

    def start_test(self) -> None:
        self.current.clear()
        self.leaks.clear()

    def check(self, record: logging.LogRecord) -> None:
        try:
            text = f"{record.getMessage()} {fields_of(record)!r}"
        except Exception:  # a record that cannot format is not ours to judge
            return
        if record.exc_info:
            text += _plain.formatException(record.exc_info)
        found = [c for c in self.current if c in text]
        found += [m for m in CREDENTIAL_SHAPE.findall(text) if m in self.ever]
        if found:
            self.leaks.append(f"{record.name}: {record.getMessage()[:300]!r}")


AUDIT = CredentialAudit()


def install() -> None:
    """Wrap the two credential makers and ``Logger.callHandlers`` (idempotent)."""
    if getattr(logging.Logger.callHandlers, "_audited", False):
        return
    generate = ApiKey.generate

    def audited_generate() -> tuple[str, str]:
        raw, prefix = generate()
        AUDIT.created(raw)
        return raw, prefix

    encode = jwt.encode

    def audited_encode(*args: Any, **kwargs: Any) -> str:
        token = encode(*args, **kwargs)
        AUDIT.created(token)
        return token

    call_handlers = logging.Logger.callHandlers

    def audited_call_handlers(self: logging.Logger, record: logging.LogRecord) -> None:
        AUDIT.check(record)
        call_handlers(self, record)

    audited_call_handlers._audited = True  # type: ignore[attr-defined]
    ApiKey.generate = staticmethod(audited_generate)  # type: ignore[method-assign]
    jwt.encode = audited_encode  # type: ignore[assignment]
    logging.Logger.callHandlers = audited_call_handlers  # type: ignore[method-assign]
