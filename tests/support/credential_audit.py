"""No log line of the suite holds a key, a token or a webhook secret it created.

Every API key (``ApiKey.generate``), user token (``jwt.encode``) and webhook signing secret
(``webhook_secrets.new_secret``) made in the test process is recorded. What is checked is what the
service writes: every line the project's formatters produce (``KeyValueFormatter``, and the same
record as ``JsonFormatter`` would write it), after the console handler's ``RequestDataFilter``.

- During each test, each line is checked at once for the running test's credentials (whole, or a
  key's secret part) and for any key- or token-shaped string the suite ever created; ``conftest``
  fails the test during which a leak happened. A record that reached no formatter of ours (a logger
  with a handler of its own) is checked raw: message, ``extra`` fields and traceback.
- Every line is also kept in the run's log file; at the end of the run, that file and the log files
  the suite's server and worker processes wrote (``*.log`` under pytest's base temporary directory)
  are searched for every credential the suite minted, whichever test made it (``conftest``'s
  ``pytest_sessionfinish`` fails the run and names them).
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import jwt

from agui_app.logs import JsonFormatter, KeyValueFormatter, fields_of
from agui_app.models import ApiKey
from agui_app.services import webhook_secrets

CREDENTIAL_SHAPE = re.compile(
    r"agui_[0-9a-f]+_[A-Za-z0-9_\-]+|eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+|whsec_[A-Za-z0-9+/=]+"
)
# Characters a needle is made of: base64 (standard and URL-safe) without the JWT's dots.
RUN = re.compile(r"[A-Za-z0-9_\-+/=]{16,}")
WINDOW = 16
_plain = logging.Formatter()
_FORMATTED = "_agui_audit_formatted"
# The formatters' own ``format`` (``install`` wraps them): the audit renders the other format with these.
_ORIGINAL_FORMAT: dict[type[logging.Formatter], Any] = {
    KeyValueFormatter: KeyValueFormatter.format,
    JsonFormatter: JsonFormatter.format,
}
_as_text = KeyValueFormatter("%(levelname)s %(name)s: %(message)s")
_as_json = JsonFormatter()


def needles_of(credential: str) -> list[str]:
    """The parts of a credential whose presence in a log means it leaked: a key's secret part, a
    token's signature, a webhook secret's base64 (each also inside the whole credential)."""
    if credential.startswith("agui_"):
        return [credential.split("_", 2)[2]]  # agui_<hex prefix>_<secret>
    if credential.startswith("whsec_"):
        return [credential.removeprefix("whsec_")]
    if credential.count(".") == 2:
        return [credential.rsplit(".", 1)[1]]  # header.payload.signature
    return [credential]


class CredentialAudit:
    def __init__(self) -> None:
        self.ever: set[str] = set()
        self.current: set[str] = set()
        self.leaks: list[str] = []
        self.forgiven: set[str] = set()
        self.log_dirs: list[Path] = []
        self._needles: dict[str, list[tuple[str, str]]] = {}  # first WINDOW chars → (needle, credential)
        fd, name = tempfile.mkstemp(prefix="agui-suite-logs-", suffix=".log")
        os.close(fd)
        self.run_log = Path(name)
        self._run_log = self.run_log.open("a", encoding="utf-8")
        self._lock = threading.Lock()  # records come from several threads

    def created(self, credential: str) -> None:
        self.ever.add(credential)
        self.current.add(credential)
        for needle in needles_of(credential):
            if len(needle) >= WINDOW:
                self.current.add(needle)
                self._needles.setdefault(needle[:WINDOW], []).append((needle, credential))

    def forgive(self, credential: str) -> None:
        """A test logged ``credential`` on purpose (to prove the audit sees it): the run's check skips it."""
        self.forgiven.add(credential)

    def start_test(self) -> None:
        self.current.clear()
        self.leaks.clear()

    # --- during a test ---------------------------------------------------------------------------

    def check_text(self, text: str, what: str) -> None:
        found = [c for c in self.current if c in text]
        found += [m for m in CREDENTIAL_SHAPE.findall(text) if m in self.ever]
        if found:
            self.leaks.append(f"{what}: {text[:300]!r}")

    def written(self, record: logging.LogRecord, line: str) -> None:
        """A line one of our formatters wrote for ``record``: check it, with the record's other format."""
        setattr(record, _FORMATTED, True)
        other_format = JsonFormatter if not line.startswith("{") else KeyValueFormatter
        try:
            other = _ORIGINAL_FORMAT[other_format](
                _as_json if other_format is JsonFormatter else _as_text, record
            )
        except Exception:  # a record that cannot format is not ours to judge
            other = ""
        for text in (line, other):
            self.check_text(text, record.name)
        with self._lock:
            if not self._run_log.closed:
                self._run_log.write(line.replace("\n", "\n  ") + "\n")

    def check_raw(self, record: logging.LogRecord) -> None:
        """A record none of our formatters wrote (a handler of its own): everything it carries."""
        if getattr(record, _FORMATTED, False):
            return
        try:
            text = f"{record.getMessage()} {fields_of(record)!r}"
        except Exception:  # a record that cannot format is not ours to judge
            return
        if record.exc_info:
            text += _plain.formatException(record.exc_info)
        self.check_text(text, record.name)

    # --- at the end of the run -------------------------------------------------------------------

    def log_files(self) -> list[Path]:
        with self._lock:
            if not self._run_log.closed:
                self._run_log.flush()
        found = [self.run_log]
        for directory in self.log_dirs:
            found += sorted(p for p in directory.rglob("*.log") if p.is_file())
        return found

    def scan(self, files: Iterable[Path] | None = None) -> list[str]:
        """Every minted credential found in ``files`` (default: the run's log and the processes'
        logs), as ``"<file>:<line>: <which credential>"``; forgiven ones are left out."""
        leaks: list[str] = []
        for path in self.log_files() if files is None else files:
            for number, line in _lines(path):
                for credential in self.found_in(line):
                    if credential not in self.forgiven:
                        leaks.append(f"{path}:{number}: {credential[:12]}… ({_kind(credential)})")
        return leaks

    def found_in(self, text: str) -> set[str]:
        """The minted credentials whose needle occurs in ``text`` (a window lookup per position of
        each long base64-looking run, then an exact comparison)."""
        found: set[str] = set()
        for run in RUN.findall(text):
            for start in range(len(run) - WINDOW + 1):
                for needle, credential in self._needles.get(run[start : start + WINDOW], ()):
                    if run.startswith(needle, start):
                        found.add(credential)
        return found

    def close(self, *, keep: bool) -> None:
        with self._lock:
            self._run_log.close()
        if not keep:
            self.run_log.unlink(missing_ok=True)


def _kind(credential: str) -> str:
    if credential.startswith("agui_"):
        return "an API key"
    if credential.startswith("whsec_"):
        return "a webhook secret"
    return "a user token"


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            yield from enumerate(handle, start=1)
    except OSError:
        return


AUDIT = CredentialAudit()


def install() -> None:
    """Wrap the credential makers, our two formatters and ``Logger.callHandlers`` (idempotent)."""
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

    new_secret = webhook_secrets.new_secret

    def audited_new_secret() -> str:
        secret = new_secret()
        AUDIT.created(secret)
        return secret

    for formatter, original in _ORIGINAL_FORMAT.items():

        def audited_format(
            self: logging.Formatter, record: logging.LogRecord, _original: Any = original
        ) -> str:
            line: str = _original(self, record)
            AUDIT.written(record, line)
            return line

        formatter.format = audited_format  # type: ignore[method-assign]

    call_handlers = logging.Logger.callHandlers

    def audited_call_handlers(self: logging.Logger, record: logging.LogRecord) -> None:
        call_handlers(self, record)
        AUDIT.check_raw(record)

    audited_call_handlers._audited = True  # type: ignore[attr-defined]
    ApiKey.generate = staticmethod(audited_generate)  # type: ignore[method-assign]
    jwt.encode = audited_encode  # type: ignore[assignment]
    webhook_secrets.new_secret = audited_new_secret  # type: ignore[assignment]
    logging.Logger.callHandlers = audited_call_handlers  # type: ignore[method-assign]
