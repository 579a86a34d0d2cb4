// node replay.mjs <streamUrl> <threadId>: a fresh client fed with GET <streamUrl> (a run's stored stream).
import { HttpAgent, runHttpRequest, transformHttpEventStream } from "@ag-ui/client";
import { fail, headers, newAgent, observed, print } from "./common.mjs";

const [streamUrl, threadId] = process.argv.slice(2);

class ReplayingAgent extends HttpAgent {
  connect() {
    const request = () => fetch(streamUrl, { method: "GET", headers: { ...headers(), Accept: "text/event-stream" } });
    return transformHttpEventStream(runHttpRequest(request), this.debugLogger);
  }
}

const agent = newAgent(streamUrl, threadId, {}, ReplayingAgent);
const types = [];
try {
  await agent.connectAgent({}, { onEvent: ({ event }) => { types.push(event.type); } });
} catch (err) {
  fail(err, observed(agent, { eventTypes: [types] }));
}
print(observed(agent, { eventTypes: [types] }));
