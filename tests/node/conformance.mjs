// The published client's view of event streams, for tests/agui_app/transports/test_conformance_matrix.py.
// Reads one JSON document on stdin: {"streams": {name: [event, …]}}. For each stream:
//   - "strict": every event parsed by @ag-ui/core 1.0.0's EventSchemas, then by its own type's object
//     schema made strict (a key the protocol does not define is an issue): [{index, type, issues}]
//   - "messages", "state": what @ag-ui/client 1.0.0 ends with after applying the stream (an
//     AbstractAgent whose run() replays the events: the client's verify, chunk and apply pipeline)
//   - "error": the client's error, if it refused the stream; "warnings": what it warned
// Prints ONE JSON document {name: {...}}.
import { AbstractAgent } from "@ag-ui/client";
import { EventSchemas } from "@ag-ui/core/schemas";
import { from } from "rxjs";
import { consoleErrors, print, warnings } from "./common.mjs";

const input = JSON.parse(await new Promise((resolve) => {
  let text = "";
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (chunk) => (text += chunk));
  process.stdin.on("end", () => resolve(text));
}));

const byType = new Map();
for (const option of EventSchemas.options) byType.set(option.shape.type.value, option);

function strictIssues(events) {
  const found = [];
  events.forEach((event, index) => {
    const loose = EventSchemas.safeParse(event);
    const schema = byType.get(event?.type);
    const strict = schema ? schema.strict().safeParse(event) : { success: false, error: { issues: [{ message: "unknown type" }] } };
    const issues = [...(loose.success ? [] : loose.error.issues), ...(strict.success ? [] : strict.error.issues)];
    if (issues.length) found.push({ index, type: event?.type, issues: issues.map((i) => `${(i.path ?? []).join(".")}: ${i.message}`) });
  });
  return found;
}

class ReplayAgent extends AbstractAgent {
  constructor(events) {
    super({ threadId: events.find((e) => e.threadId)?.threadId ?? "t" });
    this.events = events;
  }
  run() {
    return from(this.events);
  }
}

const output = {};
for (const [name, events] of Object.entries(input.streams)) {
  const before = [warnings.length, consoleErrors.length];
  const agent = new ReplayAgent(events);
  let error;
  try {
    await agent.runAgent({});
  } catch (err) {
    error = err?.message ?? String(err);
  }
  output[name] = {
    strict: strictIssues(events),
    messages: agent.messages,
    state: agent.state,
    error,
    warnings: [...warnings.slice(before[0]), ...consoleErrors.slice(before[1])],
  };
}
print(output);
