// node cancel.mjs <url> <threadId> <turnJson> [abortAfter]
// The docs' StoppingAgent: abortRun() also cancels the run on the server (POST …/runs/{run}/cancel),
// whatever its onDisconnect policy. Runs one slow turn (with onDisconnect "continue", so only the
// cancel can stop it), aborts after `abortAfter` (default 2) words, and waits for the cancel's answer.
import { fail, observed, print, warnings } from "./common.mjs";

// --8<-- [start:stopping-agent]  (docs include the lines between these markers)
import { HttpAgent } from "@ag-ui/client";

/** An HttpAgent whose Stop (abortRun) stops the run on the server too, not only the stream. */
class StoppingAgent extends HttpAgent {
  runAgent(parameters = {}, subscriber) {
    this.currentRunId = parameters.runId ?? crypto.randomUUID();
    return super.runAgent({ ...parameters, runId: this.currentRunId }, subscriber);
  }

  abortRun() {
    const api = this.url.replace(/\/agents\/[^/]+$/, ""); // …/api/v1/agents/{agent} → …/api/v1
    const run = `${api}/threads/${encodeURIComponent(this.threadId)}/runs/${encodeURIComponent(this.currentRunId)}`;
    this.cancelled = fetch(`${run}/cancel`, { method: "POST", headers: this.headers });
    super.abortRun();
  }
}
// --8<-- [end:stopping-agent]

const [url, threadId, turnJson, abortAfterArg] = process.argv.slice(2);
const turn = JSON.parse(turnJson);
const abortAfter = Number(abortAfterArg ?? 2);
const agent = new StoppingAgent({ url, threadId, headers: { Authorization: `Bearer ${process.env.AGUI_KEY}` } });
let abortedAtMs = null;
let words = 0;
let cancelStatus = null;
try {
  agent.addMessage({ id: turn.id, role: "user", content: turn.content });
  await agent.runAgent({ runId: turn.runId, forwardedProps: { onDisconnect: "continue" } }, {
    onEvent: ({ event }) => {
      if (event.type === "TEXT_MESSAGE_CONTENT" && ++words >= abortAfter && abortedAtMs === null) {
        abortedAtMs = Date.now();
        setTimeout(() => agent.abortRun(), 0);
      }
    },
  });
  cancelStatus = (await agent.cancelled).status;
} catch (err) {
  fail(err, observed(agent, { abortedAtMs, cancelStatus }));
}
print(observed(agent, { abortedAtMs, cancelStatus, warnings }));
