"""The playground at ``/``, in a real browser (Debian's headless Chromium, driven by playwright-core
through ``tests/node/playground.mjs``) against a real server: a staff member signs in, runs the demo
agent, watches and edits the shared state, approves a tool call, sees a call to an unknown tool not
run, and loses the connection mid-run.
Screenshots at 1280 and 390 px go to ``test-artifacts/`` (git-ignored)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from agui_app.models import Run, Thread
from agui_app.services.threads import thread_create
from tests.support.servers import ROOT, ServerProcess, start_server

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.node,
    pytest.mark.browser,
    pytest.mark.slow,
]
NODE_DIR = ROOT / "tests" / "node"
ARTIFACTS = ROOT / "test-artifacts"


def driver_env(member: Any, owner_key: str, **env: str) -> dict[str, str]:
    return {
        **os.environ,
        "PLAYGROUND_USER": member.username,
        "PLAYGROUND_PASSWORD": "pw-member-123",
        "AGUI_KEY": owner_key,
        "ARTIFACTS": str(ARTIFACTS),
        **env,
    }


def drive(scenario: str, server: ServerProcess, member: Any, owner_key: str, **env: str) -> dict[str, Any]:
    """Run one scenario of playground.mjs; returns what the page showed."""
    ARTIFACTS.mkdir(exist_ok=True)
    done = subprocess.run(
        ["node", str(NODE_DIR / "playground.mjs"), scenario, server.url],
        cwd=NODE_DIR,
        env=driver_env(member, owner_key, **env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert done.returncode == 0, (
        f"{scenario} failed\nstdout: {done.stdout}\nstderr: {done.stderr}\n{server.log()}"
    )
    seen = json.loads(done.stdout)
    assert not [e for e in seen["consoleErrors"] if "/static/playground/" in e and "WebSocket" not in e], seen
    return seen


def api_get(server: ServerProcess, key: str, path: str) -> dict[str, Any]:
    response = httpx.get(f"{server.url}/api/v1{path}", headers={"Authorization": f"Bearer {key}"}, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
def ready(server: ServerProcess, agent: Any, member: Any, owner_key: str) -> tuple[ServerProcess, Any, str]:
    return server, member, owner_key


def test_a_member_signs_in_asks_for_the_weather_and_sees_the_answer_and_the_weather_skill_loaded(
    ready: tuple[ServerProcess, Any, str],
) -> None:
    seen = drive("weather", *ready)

    assert seen["beforeSignIn"] == "no thread", "nothing is connected yet: not 'offline'"
    assert seen["noThread"] == {"text": "no thread", "state": "idle"}, "an agent picked, no thread open yet"
    assert any("Forecast for Paris" in text for text in seen["answer"]), seen["answer"]
    assert seen["tools"] == ["load_capability", "get_forecast"]
    assert seen["loaded"] == ["weatherv1"]  # the capability and the skill version its load used
    assert ["weather", "true"] in seen["catalog"] and ["refunds", "false"] in seen["catalog"]
    assert seen["connection"].startswith("live · WebSocket")
    assert (
        "get_forecast" in seen["threadTools"] and "get_forecast" not in seen["agentTools"]
    )  # both documents
    words = [seq for seq, kind in seen["filtered"] if kind == "TEXT_MESSAGE_CONTENT"]
    assert words and len(words) == len(seen["filtered"]), "the filter shows one type"
    assert seen["eventCount"] == f"{len(words)} of {len(seen['seqs'])}"
    thread = Thread.objects.get(thread_id=seen["threadId"])
    member = ready[1]
    assert thread.user == f"staff:{member.pk}"  # the page ran on a user token minted for the member
    assert seen["seqs"] == list(range(1, thread.last_seq + 1))
    assert Run.objects.get(thread=thread).status == "succeeded"


def test_the_state_tree_follows_a_run_sends_edits_and_shows_a_stale_edit_as_a_conflict(
    ready: tuple[ServerProcess, Any, str],
) -> None:
    server, _, key = ready
    seen = drive("state", *ready)

    assert seen["notReloaded"], "the page reloaded"
    assert seen["versionAfterRun"] == "v1" and seen["versionAfterEdit"] == "v2"
    stored = api_get(server, key, f"/threads/{seen['threadId']}/state")
    assert stored == {
        "state": {"todos": [{"text": "buy oat milk", "done": False}], "note": "from someone else"},
        "version": 3,
    }, "the tree's edit reached the server; the stale one did not"
    assert "Conflict" in seen["conflict"] and "v2" in seen["conflict"] and "v3" in seen["conflict"]
    assert '"from someone else"' in seen["tree"] and seen["version"] == "v3"  # reloaded
    history = api_get(server, key, f"/threads/{seen['threadId']}/state/history")
    assert [item["source"] for item in history["results"]] == [
        "api",
        "api",
        "agent",
    ]  # no 4th: nothing applied
    assert seen["phone"]["scrollWidth"] <= seen["phone"]["clientWidth"], "the 390 px page scrolls sideways"
    for width in (1280, 390):
        assert (ARTIFACTS / f"playground-{width}.png").stat().st_size > 10_000
    assert seen["afterSwitch"] == {"thread": True, "bannerHidden": True, "banner": ""}, (
        "the conflict was the other thread's"
    )


def test_approvals_resume_the_run_approved_edited_or_denied_and_its_closing_snapshot_applies_without_a_reconnect(
    ready: tuple[ServerProcess, Any, str],
) -> None:
    """A resumed run (and any turn that sent only its new message) ends with a MESSAGES_SNAPSHOT frame
    with no seq: it is not logged, so it is no gap — the page applies it and stays connected."""
    seen = drive("approval", *ready)

    assert seen["approved"] == ["Refunded 25.00 on order A-1001."]
    assert seen["results"][:2] == ["Refunded 25.00 on order A-1001.", "Refunded 10.00 on order A-1001."]
    assert "A voucher was given instead." in seen["results"][2] and "Refunded" not in seen["results"][2]
    assert seen["chips"] == [["done", "ok"], ["done", "ok"], ["denied · not run", "skipped"]]
    runs = Run.objects.filter(thread__thread_id=seen["threadId"]).order_by("started_at")
    assert [run.status for run in runs] == ["succeeded"] * 6
    assert [(run.outcome or {}).get("type") == "interrupt" for run in runs] == [True, False] * 3

    shown = seen["shown"]
    assert seen["restored"]["shown"] == seen["restored"]["sent"], "the snapshot replaced what the page showed"
    assert seen["sockets"]["unlogged"] == shown["unlogged"] == 5  # each resume and each later turn
    assert shown["unloggedRows"] == ["MESSAGES_SNAPSHOT"] * 5, "listed, without a seq"
    assert shown["items"] == shown["stored"] and len(shown["items"]) == 12, (
        "the page shows the stored history"
    )
    assert seen["sockets"]["opened"] == 1, "the WebSocket was never reopened"
    assert shown["resumes"] == 0
    assert not [text for text in shown["connection"] if "resum" in text or "reconnecting" in text], shown[
        "connection"
    ]
    last_seq = Thread.objects.get(thread_id=seen["threadId"]).last_seq
    assert shown["seqs"] == list(range(1, last_seq + 1)) and shown["lastSeq"] == last_seq


def test_an_approval_card_counts_down_to_its_expiry_then_only_a_denial_is_offered(
    ready: tuple[ServerProcess, Any, str], agent: Any
) -> None:
    type(agent).objects.filter(pk=agent.pk).update(approval_ttl_seconds=4)
    seen = drive("approvalCountdown", *ready)

    assert re.fullmatch(r"expires in 0:0[1-4]", seen["before"]), seen
    assert seen["approveEnabledBefore"] is True
    assert seen["after"] == "expired: counts as denied"
    assert seen["approveEnabledAfter"] is False
    assert any("Too late." in result for result in seen["results"]), seen["results"]


def test_an_approval_cards_arguments_stay_inside_the_card_at_1280_and_390_px(
    ready: tuple[ServerProcess, Any, str],
) -> None:
    seen = drive("approvalLayout", *ready)

    for width in ("1280", "390"):  # every part: the argument box, the message, the buttons
        assert seen["layout"][width]["outside"] == [], seen["layout"]
        assert not seen["layout"][width]["scrolls"], seen["layout"]
    assert (ARTIFACTS / "playground-approval-390.png").stat().st_size > 10_000


def test_a_call_to_an_unknown_tool_shows_that_it_did_not_run(ready: tuple[ServerProcess, Any, str]) -> None:
    seen = drive("unknownTool", *ready)

    not_run = ["not run · unknown tool", "skipped"]
    assert seen["live"] == [not_run], "from the stream: the retry prompt pydantic-ai answered the model with"
    assert seen["afterSnapshot"] == [not_run, not_run], "the closing snapshot (its tool message has an error)"
    assert seen["hydrated"] == [not_run, not_run], "from the stored messages"
    assert "Nothing ran" in seen["title"]
    assert seen["others"] == ["done", "done"]  # load_capability and get_forecast ran
    assert seen["answer"][-1] == "Second."


def test_a_connection_cut_mid_run_resumes_from_the_last_seq_with_no_text_lost_or_repeated(
    ready: tuple[ServerProcess, Any, str],
) -> None:
    seen = drive("resume", *ready)

    assert seen["resumes"] >= 1
    assert any(text.startswith("reconnecting") for text in seen["connection"]), seen["connection"]
    assert any(f"resumed after seq {seen['seqAtDrop']}" in text for text in seen["connection"]), seen[
        "connection"
    ]
    texts = [text for text in seen["answer"] if text]
    assert texts == [seen["words"]], "every word once, in order"
    assert seen["todos"].count("before the drop") == 1
    thread = Thread.objects.get(thread_id=seen["threadId"])
    assert seen["seqs"] == list(range(1, thread.last_seq + 1)), "no gap, no repeat"
    assert seen["seqAtDrop"] < thread.last_seq


def test_a_server_killed_mid_run_is_replaced_and_the_page_resumes_on_the_new_process(
    transactional_db: None, tmp_path: Path, agent: Any, member: Any, owner_key: str
) -> None:
    servers = [start_server(tmp_path)]
    driver = subprocess.Popen(
        ["node", str(NODE_DIR / "playground.mjs"), "restart", servers[0].url],
        cwd=NODE_DIR,
        env=driver_env(member, owner_key),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert driver.stdout is not None and driver.stdin is not None
        line = driver.stdout.readline()
        assert json.loads(line) == {"ask": "restart"}, line + (driver.stderr.read() if driver.stderr else "")
        servers[0].kill()  # SIGKILL mid-run: no cleanup, the run's task dies with the process
        servers.append(start_server(tmp_path))
        driver.stdin.write(json.dumps({"port": servers[1].port}) + "\n")
        driver.stdin.flush()
        output, errors = driver.communicate(timeout=150)
    finally:
        driver.kill()
        for server in servers:
            server.stop()
    seen = json.loads(output.strip().splitlines()[-1])
    assert "failed" not in seen, f"{seen}\n{errors}"

    assert any("run_interrupted" in text for text in seen["errors"]), seen["errors"]
    assert seen["tools"] == ["load_capability", "add_todo"]  # each once: resumed after the last seq
    assert seen["todos"].count("before the restart") == 1
    assert "resumed after seq" in seen["connection"]
    thread = Thread.objects.get(thread_id=seen["threadId"])
    assert seen["seqs"] == list(range(1, thread.last_seq + 1)) and seen["seqAtKill"] < thread.last_seq
    assert Run.objects.get(thread=thread).status == "interrupted"


def test_a_pasted_user_token_runs_the_agent_as_its_user(
    server: ServerProcess, agent: Any, member: Any, owner_key: str
) -> None:
    minted = httpx.post(
        f"{server.url}/api/v1/tokens",  # what the tenant's backend does (the server signs with its secret)
        headers={"Authorization": f"Bearer {owner_key}"},
        json={"user": "alice", "ttlSeconds": 600, "agents": ["assistant"]},
        timeout=10,
    )
    token = minted.json()["token"]
    seen = drive("pastedToken", server, member, owner_key, USER_TOKEN=token)

    assert "pasted user token" in seen["credential"]
    assert any("Forecast for Paris" in text for text in seen["answer"])
    assert Thread.objects.get(thread_id=seen["threadId"]).user == "alice"


def test_without_the_websocket_the_page_streams_over_sse_and_stop_cancels_the_run(
    transactional_db: None, tmp_path: Path, agent: Any, member: Any, owner_key: str
) -> None:
    server = start_server(tmp_path, extra_env={"AGUI_WEBSOCKET_ENABLED": "0"})
    try:
        seen = drive("sseStop", server, member, owner_key)
    finally:
        server.stop()

    assert seen["connection"].startswith("live · SSE"), seen["connection"]
    assert any("Forecast for Paris" in text for text in seen["answer"])
    assert "too late" not in " ".join(seen["answer"]) and "Run stopped." in seen["notices"]
    [_, stopped] = Run.objects.filter(thread__thread_id=seen["threadId"]).order_by("started_at")
    assert stopped.status == "cancelled"
    thread = Thread.objects.get(thread_id=seen["threadId"])
    assert seen["seqs"] == list(range(1, thread.last_seq + 1))


def test_the_admin_thread_page_fits_its_state_form_and_view_site_opens_the_playground(
    ready: tuple[ServerProcess, Any, str], owner_tenant: Any, agent: Any
) -> None:
    thread = thread_create(tenant=owner_tenant, agent=agent, thread_id="admin-look", title="Looked at")
    seen = drive("adminThread", *ready, ADMIN_THREAD_PATH=f"/admin/agui_app/thread/{thread.pk}/change/")

    assert seen["viewSite"] == "/"
    assert seen["textareaWidth"] > 600, seen
    assert seen["scrollWidth"] <= seen["clientWidth"], "the page scrolls sideways"


def test_a_member_attaches_an_image_and_the_demo_model_describes_it(
    ready: tuple[ServerProcess, Any, str],
) -> None:
    import base64

    from tests.support.files import png

    server, _, owner_key = ready
    seen = drive("attach", *ready, PNG_BASE64=base64.b64encode(png(30, 20)).decode())

    assert seen["chip"] == "📎 dot.png" and seen["chipHidden"] is True
    assert seen["users"] == ["What is this? [image: image/png]"]
    assert "image/png" in seen["answers"][-1] and "30x20 pixels" in seen["answers"][-1]
    stored = api_get(server, owner_key, f"/threads/{seen['threadId']}/messages")["messages"]
    assert stored[0]["content"][1]["source"]["value"].startswith("agui-file://")


def test_a_thumbs_down_with_a_comment_and_an_intervention_from_the_page(
    ready: tuple[ServerProcess, Any, str],
) -> None:
    seen = drive("feedback", *ready)

    server, _, owner_key = ready
    assert seen["pressed"] == "true" and seen["interveneHiddenAfter"] is not None
    assert seen["commentAfterReload"] == "It answered in Fahrenheit."
    assert "Sent to the run: Use Celsius, please." in seen["messages"]
    assert "The agent read your intervention." in seen["messages"]
    [rating] = api_get(server, owner_key, f"/threads/{seen['threadId']}/feedback")["items"]
    assert (rating["rating"], rating["comment"]) == (-1, "It answered in Fahrenheit.")
    assert rating["by"].startswith("user:staff:")
    events = api_get(server, owner_key, f"/threads/{seen['threadId']}/events")["items"]
    told = [e["event"]["value"] for e in events if e["event"].get("name") == "agui.intervention"]
    assert [(t["kind"], t["phase"]) for t in told] == [("message", "sent"), ("message", "delivered")]


def test_a_delegation_shows_as_a_nested_collapsible_section_with_its_own_tool_calls(
    ready: tuple[ServerProcess, Any, str],
) -> None:
    from capabilities.models import Agent
    from tests.conftest import make_agent

    assistant = Agent.objects.get(slug="assistant")
    make_agent(assistant.tenant, "helper", skills=("weather",), description="Looks up forecasts.")
    Agent.objects.filter(pk=assistant.pk).update(subagents=["helper"])  # the warm cache expires in 1 s
    time.sleep(1.2)
    seen = drive("subagents", *ready)

    section = seen["section"]
    assert section["agent"] == "helper" and section["status"] == "done"
    assert section["open"] is False and seen["reopened"] is True  # folded once done; opens on a click
    assert [tool for tool, _ in section["tools"]] == ["load_capability", "get_forecast"]
    assert any("Oslo" in text for text in section["text"])
    assert section["follows"] == "delegate"  # right after the delegate call it belongs to
    assert seen["topTools"] == ["delegate"]  # the child's calls are inside its section only
    assert "The helper checked." in seen["answer"]
