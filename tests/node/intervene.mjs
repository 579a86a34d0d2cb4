// node intervene.mjs <url> <threadId> <turnJson> <apiBase>
// A human corrects the shared state while the run works: the client runs the turn
// ({"id", "content", "runId", "state"}) with @ag-ui/client; as the first tool result arrives (the model
// is then inside its slow next step), it PATCHes the thread's state through the REST API, as a
// person at another screen would. Prints what the client holds and the events it saw.
import { fail, headers, newAgent, observed, print } from "./common.mjs";

const [url, threadId, turnJson, apiBase] = process.argv.slice(2);
const turn = JSON.parse(turnJson);
const agent = newAgent(url, threadId, { initialState: turn.state });
const events = [];
let patched = null;
try {
  agent.addMessage({ id: turn.id, role: "user", content: turn.content });
  await agent.runAgent({ runId: turn.runId }, {
    onEvent: ({ event }) => {
      events.push(event);
      if (event.type === "TOOL_CALL_RESULT" && patched === null) {
        patched = fetch(`${apiBase}/threads/${threadId}/state`, {
          method: "PATCH",
          headers: { ...headers(), "Content-Type": "application/json-patch+json" },
          body: JSON.stringify([{ op: "replace", path: "/city", value: turn.correctedCity }]),
        }).then((response) => response.status);
      }
    },
  });
} catch (err) {
  fail(err, observed(agent, { events }));
}
print(observed(agent, { events, patchStatus: await patched }));
