// The conversation: AG-UI events (and the MESSAGES_SNAPSHOT of a hydration) → messages, tool calls
// with their arguments and results, reasoning, errors. Each item keeps its element and is updated
// in place as deltas stream.

import { fill, h, pretty } from "./dom.js";
import { interventionNotice } from "./feedback.js";

/** What a tool call's chip says: label, tone, and a title for the ones that need explaining. */
export const TOOL_STATUS = {
  calling: ["calling", "running"],
  awaiting: ["awaiting approval", "warn"],
  done: ["done", "ok"],
  failed: ["failed", "error", "The result is an error: the tool failed or asked the model to try again."],
  retry: ["retry asked", "warn", "The model was asked to try again (its arguments, or the tool, said so)."],
  unknown: ["not run · unknown tool", "skipped", "No tool of this name is callable here: the model was told so and asked to retry. Nothing ran."],
  invalid: ["not run · invalid arguments", "skipped", "The arguments did not validate: the model was told so and asked to retry. Nothing ran."],
  denied: ["denied · not run", "skipped", "Denied in an approval: the tool did not run."],
  cancelled: ["cancelled · not run", "skipped", "The approval was cancelled: the tool did not run."],
};
/** Calls known not to have run: a later "done" (the result the model was sent) does not undo that. */
const NOT_RUN = new Set(["unknown", "invalid", "denied", "cancelled"]);
/** Outcomes the stream's events tell apart; a snapshot's bare ``error`` only says "failed". */
const SPECIFIC = new Set([...NOT_RUN, "retry"]);

/** How a tool result reads: pydantic-ai answers a call it refused before running with a retry prompt
 * as the result — "Unknown tool name: …" for a tool that is not callable, pydantic's validation
 * errors (``[{type, loc, msg, …}]``) for arguments that do not fit. ``error`` is the stored tool
 * message's (MESSAGES_SNAPSHOT): set for every result that is not a success. */
export function resultStatus(content, error = null) {
  const text = typeof content === "string" ? content : "";
  if (text.startsWith("Unknown tool name: ")) return "unknown";
  if (isValidationErrors(text)) return "invalid";
  return error ? "failed" : "done";
}

function isValidationErrors(text) {
  if (!text.startsWith("[{")) return false;
  try {
    const errors = JSON.parse(text);
    return errors.every((e) => typeof e?.type === "string" && Array.isArray(e.loc) && typeof e.msg === "string");
  } catch {
    return false;
  }
}

/** The status an ``agui.tool_call_audit`` result (its ``outcome``) or ``agui.tool_call_decision``
 * event gives a call; null when it says nothing new. The audit is the hub's word on how a call
 * ended (``unknown_tool``: the model named a tool the run does not have, so nothing ran; ``retry``:
 * another retry prompt); ``resultStatus`` reads the same from the result where no audit is at hand. */
export function auditStatus(event) {
  const value = event.value ?? {};
  if (event.name === "agui.tool_call_decision") return { denied: "denied", cancelled: "cancelled" }[value.decision] ?? null;
  if (event.name === "agui.tool_call_audit" && value.phase === "result") {
    return { unknown_tool: "unknown", retry: "retry", failed: "failed", error: "failed" }[value.outcome] ?? null;
  }
  return null;
}

// The built-in memory capability's tools (docs/design.md §20): shown as memory reads and writes.
const MEMORY_TOOLS = { recall: "memory read", remember: "memory write", forget: "memory write" };

export class Conversation {
  constructor(list, { onAssistant = null } = {}) {
    this.list = list;
    this.onAssistant = onAssistant; // (node, messageId): an assistant message was shown
    this.items = new Map(); // id → {kind, node, …}
    this.toolNames = new Map(); // toolCallId → {name, args}
    // Sub-agent invocations (SUBAGENT_STARTED …): a section each, holding the items its events
    // (those carrying its subagentRunId) add. Page-only, like notices: a snapshot keeps them in place.
    this.subagents = new Map(); // subagentRunId → {node, inner, status, details}
    this.into = null; // the list the event being applied adds its items to (a sub-agent's, or null)
  }

  clear() {
    this.items.clear();
    this.toolNames.clear();
    fill(this.list);
  }

  /** The section of a sub-agent invocation (opened by SUBAGENT_STARTED, nested in its parent's). */
  subagent(event) {
    let found = this.subagents.get(event.subagentRunId);
    if (!found) {
      const inner = h("ol.subagent-items", {});
      const status = h("span.chip.subagent-status", { dataset: { tone: "running" } }, "running");
      const details = h("details", { open: true },
        h("summary", {}, h("span.subagent-label", {}, "sub-agent"), h("span.subagent-name", {}, event.name ?? "agent"), status),
        event.description ? h("div.subagent-about", {}, event.description) : null, inner);
      const node = h("li.subagent", { dataset: { subagentRunId: event.subagentRunId, agent: event.name ?? "" } }, details);
      found = { node, inner, status, details };
      this.subagents.set(event.subagentRunId, found);
      const parent = event.parentSubagentRunId ? this.subagents.get(event.parentSubagentRunId) : null;
      (parent ? parent.inner : this.list).append(node);
    }
    return found;
  }

  /** A sub-agent's end: its chip, and its section folded once it succeeded. */
  subagentEnd(event) {
    const section = this.subagents.get(event.subagentRunId);
    if (!section) return;
    const outcome = event.type === "SUBAGENT_ERROR" ? "failed" : (event.outcome?.type ?? "success");
    const [label, tone] = { success: ["done", "ok"], suspended: ["awaiting approval", "warn"], failed: ["failed", "error"] }[outcome] ?? [outcome, "info"];
    section.status.textContent = label;
    section.status.dataset.tone = tone;
    section.node.dataset.status = outcome;
    if (event.type === "SUBAGENT_ERROR") section.status.title = `${event.code ?? ""} ${event.message ?? ""}`.trim();
    if (outcome === "success") section.details.open = false;
  }

  scroll() {
    this.list.scrollTop = this.list.scrollHeight;
  }

  item(id, make) {
    let found = this.items.get(id);
    if (!found) {
      found = make();
      this.items.set(id, found);
      (this.into ?? this.list).append(found.node);
    }
    return found;
  }

  // --- items ------------------------------------------------------------------------------------

  user(id, text) {
    this.item(id, () => ({ kind: "user", node: h("li.msg.user", { dataset: { messageId: id } }, h("div.bubble", {}, text)) }));
    this.scroll();
  }

  text(id) {
    return this.item(id, () => {
      const bubble = h("div.bubble", {});
      const node = h("li.msg.assistant", { dataset: { messageId: id } }, bubble);
      this.onAssistant?.(node, id);
      return { kind: "text", bubble, node };
    });
  }

  reasoning(id) {
    return this.item(`reasoning:${id}`, () => {
      const body = h("div.reasoning-text", {});
      const node = h("li.reasoning", {}, h("details", { open: true }, h("summary", {}, "Reasoning"), body));
      return { kind: "reasoning", body, node };
    });
  }

  tool(id, name) {
    return this.item(`tool:${id}`, () => {
      const args = h("pre.code", {});
      const result = h("pre.code.result", { hidden: true });
      const status = h("span.chip.tool-status", { dataset: { tone: "running" } }, "calling");
      const memory = MEMORY_TOOLS[name];
      const node = h(
        memory ? "li.tool.memory" : "li.tool", { dataset: { toolCallId: id, tool: name, status: "calling" } },
        h("details", { open: true },
          h("summary", {}, h("span.tool-name", {}, name), memory ? h("span.chip.memory-chip", {}, memory) : null, status),
          h("div.tool-label", {}, "arguments"), args,
          h("div.tool-label.result-label", { hidden: true }, "result"), result),
      );
      this.toolNames.set(id, { name, args: "" });
      return { kind: "tool", name, args, result, status, node, raw: "", state: "calling" };
    });
  }

  /** Set a tool call's chip (a key of TOOL_STATUS). A call known not to have run stays so. */
  setStatus(toolCallId, state) {
    const item = this.items.get(`tool:${toolCallId}`);
    if (!item || (NOT_RUN.has(item.state) && !NOT_RUN.has(state))) return;
    const [label, tone, title] = TOOL_STATUS[state];
    item.state = state;
    item.node.dataset.status = state;
    item.status.textContent = label;
    item.status.dataset.tone = tone;
    if (title) item.status.title = title;
    else item.status.removeAttribute("title");
  }

  /** A CUSTOM audit or decision event of a call (live, or replayed after a hydration). */
  outcome(event) {
    const state = event.type === "CUSTOM" ? auditStatus(event) : null;
    if (state) this.setStatus(event.value.toolCallId, state);
  }

  notice(text, tone = "info") {
    this.list.append(h("li.notice", { dataset: { tone } }, text));
    this.scroll();
  }

  error(message, code) {
    this.list.append(h("li.error", { role: "alert" }, h("strong", {}, "Error"), ` ${message}`, code ? h("code", {}, code) : ""));
    this.scroll();
  }

  // --- events -----------------------------------------------------------------------------------

  /** Apply one AG-UI event; returns nothing (run status and state are handled by the caller). */
  apply(event) {
    this.into = event.subagentRunId ? (this.subagents.get(event.subagentRunId)?.inner ?? null) : null;
    try {
      this.applyIn(event);
    } finally {
      this.into = null;
    }
  }

  applyIn(event) {
    switch (event.type) {
      case "SUBAGENT_STARTED": this.into = null; this.subagent(event); break;
      case "SUBAGENT_FINISHED":
      case "SUBAGENT_ERROR": this.subagentEnd(event); break;
      case "TEXT_MESSAGE_START": this.text(event.messageId); break;
      case "TEXT_MESSAGE_CONTENT":
      case "TEXT_MESSAGE_CHUNK": {
        const item = this.text(event.messageId ?? "chunk");
        item.bubble.textContent += event.delta ?? "";
        break;
      }
      case "REASONING_MESSAGE_CONTENT":
      case "THINKING_TEXT_MESSAGE_CONTENT":
        this.reasoning(event.messageId ?? "thinking").body.textContent += event.delta ?? "";
        break;
      case "TOOL_CALL_START": this.tool(event.toolCallId, event.toolCallName); break;
      case "TOOL_CALL_ARGS":
      case "TOOL_CALL_CHUNK": {
        const item = this.tool(event.toolCallId, event.toolCallName ?? "tool");
        item.raw += event.delta ?? "";
        item.args.textContent = item.raw;
        this.toolNames.get(event.toolCallId).args = item.raw;
        break;
      }
      case "TOOL_CALL_END": {
        const item = this.items.get(`tool:${event.toolCallId}`);
        if (item) item.args.textContent = pretty(item.raw || "{}");
        break;
      }
      case "TOOL_CALL_RESULT": this.result(event.toolCallId, event.content, null); break;
      case "MESSAGES_SNAPSHOT": this.snapshot(event.messages ?? []); break;
      case "RUN_ERROR": this.error(event.message, event.code); break;
      case "ACTIVITY_SNAPSHOT":
        if (event.content?.added?.length) this.notice(`Now callable: ${event.content.added.join(", ")}`);
        break;
      case "CUSTOM":
        if (event.name === "agui.capability_skipped") {
          this.notice(`Capability ${event.value?.id} left out: ${event.value?.reason}`, "warn");
        } else if (interventionNotice(event)) this.notice(interventionNotice(event));
        else this.outcome(event);
        break;
      default: return;
    }
    this.scroll();
  }

  /** A call's result; ``error`` is a stored tool message's (a snapshot's), null on the live stream. */
  result(toolCallId, content, error) {
    const item = this.items.get(`tool:${toolCallId}`) ?? this.tool(toolCallId, "tool");
    item.result.hidden = false;
    item.node.querySelector(".result-label").hidden = false;
    item.result.textContent = pretty(content);
    this.setStatus(toolCallId, resultStatus(content, error));
  }

  awaiting(toolCallId) {
    if (this.items.get(`tool:${toolCallId}`)?.state === "calling") this.setStatus(toolCallId, "awaiting");
  }

  /** The stored history (MESSAGES_SNAPSHOT: a hydration, or a run's closing one) replaces the
   * messages shown. What only the page shows — notices, errors — stays after the message it
   * followed, and a call's outcome the stream told apart (not run, denied, retry) is kept: a stored
   * tool message only says ``error``. */
  snapshot(messages) {
    const known = new Map([...this.items.values()].filter((item) => SPECIFIC.has(item.state))
      .map((item) => [item.node.dataset.toolCallId, item.state]));
    const keys = new Set(messages.flatMap(keysOf));
    const keyOf = new Map([...this.items].map(([key, item]) => [item.node, key]));
    const extras = new Map([[null, []]]); // the key of the message they follow → page-only lines
    let anchor = null;
    for (const node of this.list.children) {
      const key = keyOf.get(node);
      if (key === undefined) extras.get(anchor).push(node);
      else if (keys.has(key) && !extras.has(key)) extras.set((anchor = key), []);
    }
    this.clear();
    this.list.append(...extras.get(null));
    for (const message of messages) {
      if (message.role === "user") this.user(message.id, textOf(message.content));
      else if (message.role === "assistant") {
        if (message.content) this.text(message.id).bubble.textContent = textOf(message.content);
        for (const call of message.toolCalls ?? []) {
          const item = this.tool(call.id, call.function.name);
          item.raw = call.function.arguments;
          item.args.textContent = pretty(call.function.arguments || "{}");
          this.toolNames.get(call.id).args = item.raw;
        }
      } else if (message.role === "tool") this.result(message.toolCallId, message.content, message.error ?? null);
      else if (message.role === "reasoning") this.reasoning(message.id).body.textContent = textOf(message.content);
      for (const key of keysOf(message)) this.items.get(key)?.node.after(...(extras.get(key) ?? []));
    }
    for (const [toolCallId, state] of known) this.setStatus(toolCallId, state);
    this.scroll();
  }
}

/** The keys of the items a stored message is shown as (see ``item``). */
function keysOf(message) {
  if (message.role === "user") return [message.id];
  if (message.role === "assistant") return [message.content ? message.id : null, ...(message.toolCalls ?? []).map((call) => `tool:${call.id}`)].filter(Boolean);
  if (message.role === "reasoning") return [`reasoning:${message.id}`];
  return [];
}

function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map(partText).join("");
  return "";
}

/** A part as the conversation shows it: its text, or a media part as ``[image: type]``. */
export function partText(part) {
  if (part.type === "text") return part.text ?? "";
  const source = part.source ?? {};
  return ` [${part.type}: ${source.mimeType ?? source.type ?? "file"}]`;
}

/** A thread's title: the first words of its first message (a demo script: the steps it takes). */
export function titleFor(text) {
  try {
    const steps = JSON.parse(text).agui_script;
    if (Array.isArray(steps)) return `Script: ${steps.map((s) => s.call ?? (s.say ? "say" : "step")).join(" → ")}`.slice(0, 60);
  } catch { /* words, not a script */ }
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}
