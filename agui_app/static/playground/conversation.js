// The conversation: AG-UI events (and the MESSAGES_SNAPSHOT of a hydration) → messages, tool calls
// with their arguments and results, reasoning, errors. Each item keeps its element and is updated
// in place as deltas stream.

import { fill, h, pretty } from "./dom.js";

// The built-in memory capability's tools (docs/design.md §20): shown as memory reads and writes.
const MEMORY_TOOLS = { recall: "memory read", remember: "memory write", forget: "memory write" };

export class Conversation {
  constructor(list) {
    this.list = list;
    this.items = new Map(); // id → {kind, node, …}
    this.toolNames = new Map(); // toolCallId → {name, args}
  }

  clear() {
    this.items.clear();
    this.toolNames.clear();
    fill(this.list);
  }

  scroll() {
    this.list.scrollTop = this.list.scrollHeight;
  }

  item(id, make) {
    let found = this.items.get(id);
    if (!found) {
      found = make();
      this.items.set(id, found);
      this.list.append(found.node);
    }
    return found;
  }

  // --- items ------------------------------------------------------------------------------------

  user(id, text) {
    this.item(id, () => ({ kind: "user", node: h("li.msg.user", {}, h("div.bubble", {}, text)) }));
    this.scroll();
  }

  text(id) {
    return this.item(id, () => {
      const bubble = h("div.bubble", {});
      return { kind: "text", bubble, node: h("li.msg.assistant", { dataset: { messageId: id } }, bubble) };
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
      const status = h("span.chip", { dataset: { tone: "running" } }, "calling");
      const memory = MEMORY_TOOLS[name];
      const node = h(
        memory ? "li.tool.memory" : "li.tool", { dataset: { toolCallId: id, tool: name } },
        h("details", { open: true },
          h("summary", {}, h("span.tool-name", {}, name), memory ? h("span.chip.memory-chip", {}, memory) : null, status),
          h("div.tool-label", {}, "arguments"), args,
          h("div.tool-label.result-label", { hidden: true }, "result"), result),
      );
      this.toolNames.set(id, { name, args: "" });
      return { kind: "tool", name, args, result, status, node, raw: "" };
    });
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
    switch (event.type) {
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
      case "TOOL_CALL_RESULT": this.result(event.toolCallId, event.content, false); break;
      case "RUN_ERROR": this.error(event.message, event.code); break;
      case "ACTIVITY_SNAPSHOT":
        if (event.content?.added?.length) this.notice(`Now callable: ${event.content.added.join(", ")}`);
        break;
      case "CUSTOM":
        if (event.name === "agui.capability_skipped") {
          this.notice(`Capability ${event.value?.id} left out: ${event.value?.reason}`, "warn");
        }
        break;
      default: return;
    }
    this.scroll();
  }

  result(toolCallId, content, failed) {
    const item = this.items.get(`tool:${toolCallId}`) ?? this.tool(toolCallId, "tool");
    item.result.hidden = false;
    item.node.querySelector(".result-label").hidden = false;
    item.result.textContent = pretty(content);
    item.status.textContent = failed ? "failed" : "done";
    item.status.dataset.tone = failed ? "error" : "ok";
  }

  awaiting(toolCallId) {
    const item = this.items.get(`tool:${toolCallId}`);
    if (item && item.status.textContent === "calling") {
      item.status.textContent = "awaiting approval";
      item.status.dataset.tone = "warn";
    }
  }

  /** The stored history (MESSAGES_SNAPSHOT): rebuilt from scratch. */
  snapshot(messages) {
    this.clear();
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
      } else if (message.role === "tool") this.result(message.toolCallId, message.content, Boolean(message.error));
      else if (message.role === "reasoning") this.reasoning(message.id).body.textContent = textOf(message.content);
    }
    this.scroll();
  }
}

function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => part.text ?? "").join("");
  return "";
}
