// Drives CopilotKit's own v2 runtime (@copilotkit/runtime) with the hub's runner, headless: the
// runtime's fetch handler (createCopilotEndpoint(...).fetch) gets the Requests a CopilotKit frontend
// sends, and talks to a real hub. Prints one JSON document.
//
//   node test/runtime-gestures.mjs stop-then-run <threadId>   a slow run, Stop mid-stream, a second run
//   node test/runtime-gestures.mjs connect <threadId>         a fresh runtime hydrating the thread
// Environment: HUB_URL, AGUI_KEY.

const [mode, threadId] = process.argv.slice(2);

// --8<-- [start:runtime]  (docs/guides/copilotkit.md includes these lines)
import { HttpAgent } from "@ag-ui/client";
import { CopilotRuntime, createCopilotEndpoint } from "@copilotkit/runtime/v2";

import { HubAgentRunner } from "../hub-agent-runner.mjs";

const hub = process.env.HUB_URL;
const key = process.env.AGUI_KEY;

const runner = new HubAgentRunner({ baseUrl: hub, apiKey: key });
const runtime = new CopilotRuntime({
  agents: { assistant: new HttpAgent({ url: `${hub}/api/v1/agents/assistant`, headers: { Authorization: `Bearer ${key}` } }) },
  runner,
});
const app = createCopilotEndpoint({ runtime, basePath: "/api/copilotkit" }); // app.fetch(Request) → Response
// --8<-- [end:runtime]

function post(path, body) {
  return app.fetch(
    new Request(`http://frontend.test/api/copilotkit${path}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify(body),
    }),
  );
}

/** Reads SSE `data:` frames; `until(event)` returning true hands the reader back mid-stream. */
async function read(response, events, until = () => false) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return null;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
      if (!data) continue;
      const event = JSON.parse(data);
      events.push(event);
      if (until(event)) return { reader, decoder, buffer };
    }
  }
}

async function drain(rest, events) {
  if (rest === null) return;
  const stream = new ReadableStream({
    start(controller) {
      if (rest.buffer) controller.enqueue(new TextEncoder().encode(rest.buffer));
    },
    async pull(controller) {
      const { value, done } = await rest.reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
  });
  await read(new Response(stream), events);
}

const input = (runId, messages) => ({ threadId, runId, state: {}, messages, tools: [], context: [], forwardedProps: {} });
const script = (...steps) => JSON.stringify({ agui_script: steps });

if (mode === "stop-then-run") {
  const first = [];
  const progress = { call: "update_state", args: { patch: [{ op: "add", path: "/progress", value: 1 }] } };
  const m1 = { id: "ck-m1", role: "user", content: script(progress, { delay_ms: 20000, say: "never said" }) };
  const running = await post("/agent/assistant/run", input("ck-run-1", [m1]));
  const rest = await read(running, first, (event) => event.type === "TOOL_CALL_RESULT");
  const runningBeforeStop = await runner.isRunning({ threadId });
  const stopResponse = await post(`/agent/assistant/stop/${threadId}`, {});
  const stop = await stopResponse.json();
  await drain(rest, first);
  const m2 = { id: "ck-m2", role: "user", content: script({ say: "second answer" }) };
  const second = [];
  await read(await post("/agent/assistant/run", input("ck-run-2", [m1, m2])), second);
  const runningAtTheEnd = await runner.isRunning({ threadId });
  console.log(
    JSON.stringify({ stop, runningBeforeStop, runningAtTheEnd, first: first.map((e) => e.type), firstEnd: first.at(-1), second }),
  );
} else if (mode === "connect") {
  const events = [];
  await read(await post("/agent/assistant/connect", input("ck-connect", [])), events);
  console.log(JSON.stringify({ events }));
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
