// The playground's modules that need no browser, in Node: how the stream (transport.js) treats an
// event with no seq, and how a tool call's outcome is read from what the stream carries
// (conversation.js). Prints ONE JSON document of what they did.
import { countdown } from "../../agui_app/static/playground/approvals.js";
import { auditStatus, resultStatus } from "../../agui_app/static/playground/conversation.js";
import { ThreadStream } from "../../agui_app/static/playground/transport.js";

function stream(after) {
  const seen = { events: [], statuses: [] };
  const threadStream = new ThreadStream({
    api: null, threadId: "t", transport: "websocket", after,
    onEvent: (seq, event) => seen.events.push([seq, event.type]),
    onStatus: (status) => seen.statuses.push(status.state),
    onError: () => {},
  });
  threadStream.reconnect = (reason) => seen.statuses.push(`reconnect: ${reason}`); // no network here
  return [threadStream, seen];
}

// A run's tail on the WebSocket: its last logged events, its closing snapshot (no seq), its end.
const [tail, tailSeen] = stream(4);
tail.ingest(5, { type: "TEXT_MESSAGE_END" });
tail.ingest(undefined, { type: "MESSAGES_SNAPSHOT", messages: [] }); // a WebSocket frame without "seq"
tail.ingest(null, { type: "MESSAGES_SNAPSHOT", messages: [] }); // an SSE frame without "id:"
tail.ingest(6, { type: "RUN_FINISHED" });

// What the cursor still does: a repeat is dropped, a gap resumes.
const [cursor, cursorSeen] = stream(2);
cursor.ingest(2, { type: "RUN_STARTED" });
cursor.ingest(4, { type: "RUN_FINISHED" });

const custom = (name, value) => ({ type: "CUSTOM", name, value });
process.stdout.write(`${JSON.stringify({
  tail: { ...tailSeen, lastSeq: tail.lastSeq, unlogged: tail.unlogged },
  cursor: { ...cursorSeen, lastSeq: cursor.lastSeq, duplicates: cursor.duplicates },
  results: {
    unknownTool: resultStatus("Unknown tool name: 'no_such_tool'. Available tools: 'load_capability'"),
    invalidArgs: resultStatus('[{"type":"missing","loc":["text"],"msg":"Field required","input":{}}]'),
    storedError: resultStatus("There is no todo #7.", "There is no todo #7."),
    ran: resultStatus("Forecast for Paris: sunny, 21°C."),
    ranReturningAList: resultStatus('[{"text":"buy milk","done":false}]'),
  },
  countdowns: {
    none: countdown(undefined, 0),
    minutes: countdown("2026-01-01T00:04:05Z", Date.parse("2026-01-01T00:00:00Z")),
    hours: countdown("2026-01-01T02:00:09.500Z", Date.parse("2026-01-01T00:00:00Z")),
    expired: countdown("2026-01-01T00:00:00Z", Date.parse("2026-01-01T00:00:01Z")),
    garbage: countdown("not a date", 0),
  },
  audits: {
    denied: auditStatus(custom("agui.tool_call_decision", { toolCallId: "c", decision: "denied" })),
    approved: auditStatus(custom("agui.tool_call_decision", { toolCallId: "c", decision: "approved" })),
    unknownTool: auditStatus(custom("agui.tool_call_audit", { toolCallId: "c", phase: "result", outcome: "unknown_tool" })),
    retryPrompt: auditStatus(custom("agui.tool_call_audit", { toolCallId: "c", phase: "result", outcome: "retry" })),
    raised: auditStatus(custom("agui.tool_call_audit", { toolCallId: "c", phase: "result", outcome: "error" })),
    succeeded: auditStatus(custom("agui.tool_call_audit", { toolCallId: "c", phase: "result", outcome: "succeeded" })),
    callPhase: auditStatus(custom("agui.tool_call_audit", { toolCallId: "c", phase: "call" })),
  },
})}\n`);
