// The inspector's panels: capabilities (loaded, the on-demand catalog, the AgentCapabilities
// documents) and the event log (every event with its seq, filtered by type).

import { $, fill, h } from "./dom.js";

const MAX_LOG_ROWS = 3000;

export function renderCapabilities(root, { agentDoc, threadDoc, loaded, which }) {
  const doc = which === "thread" && threadDoc ? threadDoc : agentDoc;
  const catalog = (threadDoc ?? agentDoc)?.custom?.onDemandCapabilities ?? [];
  const versions = new Map((loaded ?? []).map((item) => [item.id, item]));
  const tools = (threadDoc ?? agentDoc)?.tools?.items ?? [];
  fill(root,
    h("h3", {}, "Loaded in this thread"),
    loaded?.length
      ? h("ul.caps.loaded", {}, loaded.map((item) => h("li", { dataset: { capability: item.id } },
          h("span.cap-id", {}, item.id),
          h("span.chip", { dataset: { tone: item.available ? "ok" : "warn" } },
            item.skillVersion ? `v${item.skillVersion}` : "loaded"),
          item.available ? null : h("span.muted", {}, "withdrawn"))))
      : h("p.muted", {}, "Nothing loaded yet: the model loads a capability when it needs one."),
    h("h3", {}, "On-demand catalog"),
    catalog.length
      ? h("ul.caps.catalog", {}, catalog.map((entry) => h("li", { dataset: { capability: entry.id, loaded: entry.loaded } },
          h("div", {}, h("span.cap-id", {}, entry.id),
            entry.loaded ? h("span.chip", { dataset: { tone: "ok" } },
              versions.get(entry.id)?.skillVersion ? `loaded · v${versions.get(entry.id).skillVersion}` : "loaded")
              : h("span.chip", {}, "on demand")),
          h("div.muted", {}, entry.description))))
      : h("p.muted", {}, "No deferred capabilities."),
    h("h3", {}, "Tools the model can call now"),
    h("p.tools", {}, tools.length ? tools.map((tool) => h("code", {}, tool.name)) : h("span.muted", {}, "none")),
    h("div.doc-head", {},
      h("h3", {}, "AgentCapabilities"),
      h("div.segmented", { role: "group", "aria-label": "which document" },
        h("button", { type: "button", dataset: { which: "agent" }, "aria-pressed": String(which !== "thread") }, "Agent"),
        h("button", { type: "button", dataset: { which: "thread" }, "aria-pressed": String(which === "thread"), disabled: !threadDoc }, "This thread"))),
    h("pre.code.doc", { id: "capabilities-doc" }, doc ? JSON.stringify(doc, null, 2) : "…"),
  );
}

function summary(event) {
  switch (event.type) {
    case "TEXT_MESSAGE_CONTENT":
    case "REASONING_MESSAGE_CONTENT":
    case "TOOL_CALL_ARGS": return JSON.stringify(event.delta);
    case "TOOL_CALL_START": return event.toolCallName;
    case "TOOL_CALL_RESULT": return String(event.content).slice(0, 80);
    case "STATE_DELTA": return event.delta.map((op) => `${op.op} ${op.path}`).join(", ");
    case "MESSAGES_SNAPSHOT": return `${event.messages?.length ?? 0} messages`;
    case "RUN_STARTED": return event.runId;
    case "RUN_FINISHED": return event.outcome?.type ?? "success";
    case "RUN_ERROR": return `${event.code ?? ""} ${event.message ?? ""}`;
    case "CUSTOM": return event.name;
    default: return "";
  }
}

export class EventLog {
  constructor(root) {
    this.root = root;
    this.list = $("#event-list", root);
    this.filter = $("#event-filter", root);
    this.count = $("#event-count", root);
    this.chip = $("#event-count-chip");
    this.types = new Set();
    this.total = 0;
    this.filter.addEventListener("change", () => this.applyFilter());
  }

  clear() {
    this.types.clear();
    this.total = 0;
    fill(this.list);
    fill(this.filter, h("option", { value: "" }, "All types"));
    this.counted();
  }

  add(seq, event, { replayed = false } = {}) {
    if (!this.types.has(event.type)) {
      this.types.add(event.type);
      const options = [...this.types].sort().map((type) => h("option", { value: type }, type));
      const chosen = this.filter.value;
      fill(this.filter, h("option", { value: "" }, "All types"), options);
      this.filter.value = chosen;
    }
    const logged = seq !== null && seq !== undefined; // a run's closing MESSAGES_SNAPSHOT is not logged
    const row = h("li", { dataset: logged ? { type: event.type, seq } : { type: event.type, unlogged: "" }, hidden: Boolean(this.filter.value) && this.filter.value !== event.type },
      h("details", {},
        h("summary", {}, h("span.seq", {}, logged ? `#${seq}` : "#–"), h("span.type", {}, event.type),
          h("span.sum", {}, summary(event)), replayed ? h("span.muted", {}, "earlier") : null,
          logged ? null : h("span.muted", { title: "Sent on the run's stream only: not in the event log" }, "not logged")),
        h("pre.code", {}, JSON.stringify(event, null, 2))));
    const atBottom = this.list.scrollTop + this.list.clientHeight >= this.list.scrollHeight - 30;
    this.list.append(row);
    if (this.list.children.length > MAX_LOG_ROWS) this.list.firstElementChild.remove();
    if (atBottom) this.list.scrollTop = this.list.scrollHeight;
    this.total += 1;
    this.counted();
  }

  counted() {
    this.chip.textContent = String(this.total);
    const shown = this.filter.value ? this.list.querySelectorAll(`li:not([hidden])`).length : this.total;
    this.count.textContent = this.filter.value ? `${shown} of ${this.total}` : `${this.total} events`;
  }

  applyFilter() {
    for (const row of this.list.children) row.hidden = Boolean(this.filter.value) && row.dataset.type !== this.filter.value;
    this.counted();
  }

  /** The seqs shown, in order (what a test checks for gaps and repeats); unlogged events have none. */
  seqs() {
    return [...this.list.children].filter((row) => row.dataset.seq !== undefined).map((row) => Number(row.dataset.seq));
  }
}
