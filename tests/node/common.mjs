// Shared by the scripts: capture the client's console output and print ONE JSON document.
import { HttpAgent } from "@ag-ui/client";

delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS; // the client's warnings are what we check

export const warnings = [];
export const consoleErrors = [];
const text = (args) => args.map((a) => (typeof a === "string" ? a : a instanceof Error ? a.message : JSON.stringify(a))).join(" ");
console.warn = (...args) => warnings.push(text(args));
console.error = (...args) => consoleErrors.push(text(args));
console.log = (...args) => process.stderr.write(`${text(args)}\n`); // stdout carries the JSON only

export const headers = () => ({ Authorization: `Bearer ${process.env.AGUI_KEY}` });

export function newAgent(url, threadId, options = {}, Agent = HttpAgent) {
  return new Agent({ url, threadId, headers: headers(), ...options });
}

/** Run one turn; returns the event types the subscriber saw. */
export async function runTurn(agent, parameters, message) {
  if (message) agent.addMessage({ id: message.id, role: "user", content: message.content });
  const types = [];
  await agent.runAgent(parameters, { onEvent: ({ event }) => { types.push(event.type); } });
  return types;
}

export function observed(agent, extra = {}) {
  return {
    messages: agent.messages, state: agent.state, pendingInterrupts: agent.pendingInterrupts ?? [],
    warnings, consoleErrors, ...extra,
  };
}

export function print(document) {
  process.stdout.write(`${JSON.stringify(document)}\n`);
}

/** Print what was observed so far with the error, and exit non-zero. */
export function fail(err, partial = {}) {
  print({ error: err?.message ?? String(err), status: err?.status, payload: err?.payload, ...partial, warnings, consoleErrors });
  process.exit(1);
}
