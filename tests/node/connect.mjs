// node connect.mjs <url> <threadId>: hydrate a fresh client from POST <url>/connect (checklist §10).
import { fail, newAgent, observed, print } from "./common.mjs";

// --8<-- [start:connecting-agent]  (docs/get-started/node-client.md includes these lines)
import { HttpAgent, runHttpRequest, transformHttpEventStream } from "@ag-ui/client";

class ConnectingAgent extends HttpAgent {
  connect(input) {
    const request = () => this.fetch(`${this.url}/connect`, this.requestInit(input));
    return transformHttpEventStream(runHttpRequest(request), this.debugLogger);
  }
}
// --8<-- [end:connecting-agent]

const [url, threadId] = process.argv.slice(2);
const agent = newAgent(url, threadId, {}, ConnectingAgent);
const types = [];
try {
  await agent.connectAgent({}, { onEvent: ({ event }) => { types.push(event.type); } });
} catch (err) {
  fail(err, observed(agent, { eventTypes: [types] }));
}
print(observed(agent, { eventTypes: [types] }));
