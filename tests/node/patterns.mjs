// The shared-state patterns through @ag-ui/client (HttpAgent).
// node patterns.mjs predict <url> <threadId> <turnJson>          one turn; what the client held, event by event
// node patterns.mjs cancel <url> <threadId> <turnJson>           the same, cancelling the run at the first prediction
// node patterns.mjs frontend <url> <threadId> <turnJson> <toolJson> <answer>
//   a turn offering a frontend tool; the client answers the model's call with a tool message in a second run
import { fail, headers, newAgent, observed, print } from "./common.mjs";

const [mode, url, threadId, turnJson, toolJson, answer] = process.argv.slice(2);
const turn = JSON.parse(turnJson);
const agent = newAgent(url, threadId);
const events = [];      // every event, as the client received it
const timeline = [];    // [event type, the client's /document right after it was applied]

function recorder(extra = {}) {
  return {
    onEvent: ({ event }) => { events.push(event); },
    onStateChanged: ({ state }) => { timeline.push({ after: events.at(-1)?.type, document: state?.document ?? null }); },
    onToolCallEndEvent: ({ toolCallName }) => {
      timeline.push({ at: "TOOL_CALL_END", tool: toolCallName, document: agent.state?.document ?? null });
    },
    ...extra,
  };
}

try {
  agent.addMessage({ id: turn.id, role: "user", content: turn.content });
  if (mode === "predict") {
    await agent.runAgent({ runId: turn.runId }, recorder());
  } else if (mode === "cancel") {
    let cancelled = false;
    const cancelUrl = new URL(`/api/v1/threads/${threadId}/runs/${turn.runId}/cancel`, url);
    await agent.runAgent({ runId: turn.runId }, recorder({
      onStateDeltaEvent: async ({ event }) => {
        if (!cancelled && event.metadata?.predictedState === "streaming") {
          cancelled = true;
          const response = await fetch(cancelUrl, { method: "POST", headers: headers() });
          timeline.push({ cancel: response.status });
        }
      },
    }));
  } else if (mode === "frontend") {
    const tool = JSON.parse(toolJson);
    await agent.runAgent({ runId: turn.runId, tools: [tool] }, recorder());
    const calls = agent.messages.filter((m) => m.role === "assistant").flatMap((m) => m.toolCalls ?? []);
    const call = calls.find((c) => c.function.name === tool.name);
    if (!call) throw new Error(`the model did not call ${tool.name}`);
    agent.addMessage({ id: `tool-${call.id}`, role: "tool", toolCallId: call.id, content: answer });
    await agent.runAgent({ runId: `${turn.runId}-2`, tools: [tool] }, recorder());
    timeline.push({ calledWith: JSON.parse(call.function.arguments) });
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
} catch (err) {
  fail(err, observed(agent, { events, timeline }));
}
print(observed(agent, { events, timeline }));
