// node binary.mjs <url> <threadId> <turnsJson> <sse|proto>
// Runs the turns with the published HttpAgent asking for one encoding of the stream (SSE, or AG-UI's
// protobuf encoding: Accept application/vnd.ag-ui.event+proto; the client picks its parser from the
// response's content-type), then hydrates a fresh client from POST <url>/connect the same way.
// Prints {"run": observed, "connect": observed, "contentTypes": [...]}.
import { HttpAgent, runHttpRequest, transformHttpEventStream } from "@ag-ui/client";
import { AGUI_MEDIA_TYPE } from "@ag-ui/proto";
import { fail, newAgent, observed, print, runTurn } from "./common.mjs";

const [url, threadId, turnsJson, wire] = process.argv.slice(2);
const accept = wire === "proto" ? AGUI_MEDIA_TYPE : "text/event-stream";
const contentTypes = [];

class WireAgent extends HttpAgent {
  requestInit(input) {
    const init = super.requestInit(input);
    return { ...init, headers: { ...init.headers, Accept: accept } };
  }
  async fetchAndRecord(target, init) {
    const response = await this.fetch(target, init);
    contentTypes.push(response.headers.get("content-type"));
    return response;
  }
  run(input) {
    return transformHttpEventStream(runHttpRequest(() => this.fetchAndRecord(this.url, this.requestInit(input))), this.debugLogger);
  }
  connect(input) {
    const request = () => this.fetchAndRecord(`${this.url}/connect`, this.requestInit(input));
    return transformHttpEventStream(runHttpRequest(request), this.debugLogger);
  }
}

const agent = newAgent(url, threadId, {}, WireAgent);
const eventTypes = [];
let run;
try {
  for (const turn of JSON.parse(turnsJson)) {
    eventTypes.push(await runTurn(agent, { runId: turn.runId }, turn));
  }
  run = observed(agent, { eventTypes });
} catch (err) {
  fail(err, observed(agent, { eventTypes, contentTypes }));
}
const fresh = newAgent(url, threadId, {}, WireAgent);
const connectTypes = [];
try {
  await fresh.connectAgent({}, { onEvent: ({ event }) => { connectTypes.push(event.type); } });
} catch (err) {
  fail(err, { run, connect: observed(fresh, { eventTypes: [connectTypes] }), contentTypes });
}
print({ run, connect: observed(fresh, { eventTypes: [connectTypes] }), contentTypes });
