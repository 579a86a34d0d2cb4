// node stop.mjs <url> <threadId> <firstJson> [secondJson] [optionsJson]
// The Stop gesture: run the first turn ({"id", "content", "runId"}, a slow scripted answer), call
// abortRun() once `abortAfter` (default 2) TEXT_MESSAGE_CONTENT events arrived, then at once run the
// second turn, if given, with the same HttpAgent. Prints what the client holds after each step.
import { fail, newAgent, observed, print, runTurn } from "./common.mjs";

const [url, threadId, firstJson, secondJson, optionsJson] = process.argv.slice(2);
const first = JSON.parse(firstJson);
const { abortAfter = 2, forwardedProps = {} } = JSON.parse(optionsJson ?? "{}");
const agent = newAgent(url, threadId);
let abortedAtMs = null;
let words = 0;
const firstTypes = [];
const secondTypes = [];
let heldAfterAbort = null;
try {
  agent.addMessage({ id: first.id, role: "user", content: first.content });
  await agent.runAgent({ runId: first.runId, forwardedProps }, {
    onEvent: ({ event }) => {
      firstTypes.push(event.type);
      if (event.type === "TEXT_MESSAGE_CONTENT" && ++words >= abortAfter && abortedAtMs === null) {
        abortedAtMs = Date.now();
        setTimeout(() => agent.abortRun(), 0); // what a Stop button does, outside the event handler
      }
    },
  });
  heldAfterAbort = structuredClone(agent.messages);
  if (secondJson) {
    const second = JSON.parse(secondJson);
    secondTypes.push(...(await runTurn(agent, { runId: second.runId, forwardedProps }, second)));
  }
} catch (err) {
  fail(err, observed(agent, { abortedAtMs, firstTypes, secondTypes, heldAfterAbort }));
}
print(observed(agent, { abortedAtMs, firstTypes, secondTypes, heldAfterAbort }));
