"""One log line per run start and end and per refused request, with the fields an operator filters
by — and never a key or a token, in either format."""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from pathlib import Path

import jwt
import pytest
from asgiref.sync import sync_to_async
from rest_framework.test import APIClient

import project.asgi  # noqa: F401  (its django.setup() configures logging anew: before caplog's handler)
from agui_app.logs import JsonFormatter, KeyValueFormatter
from agui_app.models import ApiKey
from agui_app.services.tokens import token_mint
from agui_app.services.webhook_secrets import new_secret
from capabilities.models import Agent
from tests.support.asgi import AsgiClient
from tests.support.inputs import run_input, script, user
from tests.support.runs import run, stream
from tests.support.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)

RUN_FIELDS = {"tenant", "agent", "thread_id", "run_id"}
END_FIELDS = RUN_FIELDS | {"status", "duration_ms", "events", "input_tokens", "output_tokens", "error_code"}
BAD_KEY = "agui_000000000000_not-a-real-key-at-all-xxxxxxxx"


def lines(records: list[logging.LogRecord]) -> list[str]:
    text = KeyValueFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    as_json = JsonFormatter()
    return [text.format(r) for r in records] + [as_json.format(r) for r in records]


def of(records: list[logging.LogRecord], event: str) -> list[dict]:
    return [json.loads(JsonFormatter().format(r)) for r in records if getattr(r, "event", None) == event]


async def test_runs_and_refusals_are_logged_with_their_fields_and_no_credential(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str], owner_tenant, owner_key, agent: Agent
) -> None:
    caplog.set_level(logging.INFO)
    token = (await sync_to_async(token_mint)(tenant=owner_tenant, user="alice", ttl_seconds=600)).token
    alice = AsgiClient(token)

    ok = await run(alice, "assistant", run_input("t-logged", [user(script({"say": "fine"}))], run_id="r-ok"))
    assert ok[-1].type == "RUN_FINISHED"
    await Agent.objects.filter(pk=agent.pk).aupdate(model="no-such-provider:x")
    failed = await run(
        AsgiClient(owner_key), "assistant", run_input("t-failing", [user("hi")], run_id="r-bad")
    )
    assert failed[-1].type == "RUN_ERROR"
    status, _, _ = await stream(
        AsgiClient(BAD_KEY), "/api/v1/agents/assistant", run_input("t-x", [user("x")])
    )
    assert status == 401
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {owner_key}")
    assert (await sync_to_async(api.get)("/api/v1/threads/no-such-thread")).status_code == 404

    async def both_ended() -> bool:
        return len(of(caplog.records, "run.finished")) == 2

    await eventually(both_ended, within=10)
    records = list(caplog.records)

    started = {line["run_id"]: line for line in of(records, "run.started")}
    assert set(started) == {"r-ok", "r-bad"}
    assert RUN_FIELDS <= set(started["r-ok"]) and started["r-ok"]["tenant"] == "acme"
    ended = {line["run_id"]: line for line in of(records, "run.finished")}
    assert END_FIELDS <= set(ended["r-ok"]) and END_FIELDS <= set(ended["r-bad"])
    assert ended["r-ok"]["status"] == "succeeded" and ended["r-ok"]["error_code"] is None
    assert ended["r-ok"]["events"] >= len(ok) and ended["r-ok"]["thread_id"] == "t-logged"
    assert ended["r-bad"]["status"] == "failed" and ended["r-bad"]["error_code"] == "model_unavailable"
    refused = {(line["status"], line["code"]) for line in of(records, "request.refused")}
    assert {(401, "unauthenticated"), (404, "not_found")} <= refused

    written = "\n".join(lines(records)) + caplog.text + "".join(capfd.readouterr())
    secret = owner_key.split("_", 2)[2]
    for credential in (owner_key, secret, token, BAD_KEY):
        assert credential not in written


def test_the_text_format_puts_the_fields_after_the_message() -> None:
    record = logging.LogRecord("agui.runs", logging.INFO, __file__, 1, "run started", None, None)
    record.tenant, record.run_id = "acme", "r-1"
    line = KeyValueFormatter("%(levelname)s %(name)s: %(message)s").format(record)
    assert line == "INFO agui.runs: run started tenant='acme' run_id='r-1'"
    body = json.loads(JsonFormatter().format(record))
    assert body["message"] == "run started" and body["tenant"] == "acme" and body["level"] == "INFO"


def test_the_suite_wide_audit_catches_a_logged_key(owner_key: str) -> None:
    from tests.support.credential_audit import AUDIT

    assert owner_key in AUDIT.current  # recorded when the fixture made it
    logging.getLogger("agui.test").warning("careless: %s", owner_key.split("_", 2)[2])
    assert AUDIT.leaks and "careless" in AUDIT.leaks[0]
    AUDIT.leaks.clear()  # this test logged it on purpose
    AUDIT.log_files()  # flushes the run's log
    assert owner_key in AUDIT.found_in(AUDIT.run_log.read_text())  # the run's end would find it too
    AUDIT.forgive(owner_key)


def test_the_run_wide_audit_finds_any_minted_credential_in_any_process_log() -> None:
    from tests.support.credential_audit import CredentialAudit

    audit = CredentialAudit()
    # Outside the run's temporary directory: the real audit must not find these planted leaks.
    tmp_path = Path(tempfile.mkdtemp(prefix="agui-audit-test-"))
    key, _ = ApiKey.generate()
    token = jwt.encode({"sub": "alice"}, "k" * 32, algorithm="HS256")
    secret = new_secret()
    for credential in (key, token, secret):
        audit.created(credential)
    audit.start_test()  # minted in an earlier test: no longer the running test's
    audit.log_dirs.append(tmp_path)
    (tmp_path / "server-1.log").write_text(
        f"INFO agui: fine\nWARNING x: got {key.split('_', 2)[2]} in a header\n"
        f"INFO y: token={token.rsplit('.', 1)[1]}\n"
    )
    (tmp_path / "worker-1.log").write_text(f"DEBUG z: signing with {secret.removeprefix('whsec_')[:30]}\n")
    try:
        leaks = audit.scan()
    finally:
        audit.close(keep=False)
        shutil.rmtree(tmp_path)
    assert [leak.rsplit(" (", 1)[1] for leak in leaks] == ["an API key)", "a user token)"]
    assert "server-1.log:2:" in leaks[0] and "server-1.log:3:" in leaks[1]  # a part of a secret is no leak
