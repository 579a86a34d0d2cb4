// node resume.mjs <url> <threadId> <turnJson> <approve|deny|edit> [reason | editedArgsJson]
// Runs a turn that ends in interrupts, then resumes every open interrupt with the same decision.
import { buildResumeArray } from "@ag-ui/client";
import { randomUUID } from "node:crypto";
import { fail, newAgent, observed, print, runTurn } from "./common.mjs";

const [url, threadId, turnJson, decision, extra] = process.argv.slice(2);
const payloads = {
  approve: () => ({ approved: true }),
  deny: () => ({ approved: false, reason: extra ?? "Not approved." }),
  edit: () => ({ approved: true, editedArgs: JSON.parse(extra) }),
};
const agent = newAgent(url, threadId);
const eventTypes = [];
let interrupts = [];
try {
  const turn = JSON.parse(turnJson);
  eventTypes.push(await runTurn(agent, { runId: turn.runId }, turn));
  interrupts = agent.pendingInterrupts;
  const responses = Object.fromEntries(interrupts.map((i) => [i.id, { status: "resolved", payload: payloads[decision]() }]));
  const resume = buildResumeArray(interrupts, responses);
  eventTypes.push(await runTurn(agent, { runId: `run-${randomUUID()}`, resume }));
} catch (err) {
  fail(err, observed(agent, { eventTypes, interrupts }));
}
print(observed(agent, { eventTypes, interrupts }));
