// Pending approvals: a run that called a `requires_approval` tool ended with an `interrupt`
// outcome. Each interrupt gets approve / deny (with a reason) / approve with edited arguments; once
// every open interrupt has a decision, the run resumes with `RunAgentInput.resume`.

import { fill, h, pretty } from "./dom.js";

export class Approvals {
  /** ``toolCall(toolCallId)`` → {name, args}; ``onResume(resume)`` starts the resuming run. */
  constructor(root, { toolCall, onResume }) {
    Object.assign(this, { root, toolCall, onResume });
    this.interrupts = [];
    this.decisions = new Map();
  }

  show(interrupts) {
    this.interrupts = (interrupts ?? []).filter((item) => item.reason === "tool_call" || item.toolCallId);
    this.decisions.clear();
    this.render();
  }

  clear() {
    this.show([]);
  }

  get pending() {
    return this.interrupts.length > 0;
  }

  render() {
    fill(this.root, this.interrupts.map((interrupt) => this.card(interrupt)));
  }

  card(interrupt) {
    const call = this.toolCall(interrupt.toolCallId) ?? { name: "tool", args: "{}" };
    const original = pretty(call.args || "{}");
    const args = h("textarea.code", { rows: Math.min(8, original.split("\n").length + 1), spellcheck: false, "aria-label": "arguments", value: original });
    const reason = h("input", { placeholder: "Reason (for a denial)", "aria-label": "reason" });
    const problem = h("p.problem", { hidden: true });
    const decided = this.decisions.get(interrupt.id);
    const decide = (payload) => {
      this.decisions.set(interrupt.id, payload);
      if (this.decisions.size === this.interrupts.length) {
        const resume = this.interrupts.map((item) => ({
          interruptId: item.id, status: "resolved", payload: this.decisions.get(item.id),
        }));
        this.interrupts = [];
        this.render();
        this.onResume(resume);
      } else this.render();
    };
    const approveEdited = () => {
      try {
        decide({ approved: true, editedArgs: JSON.parse(args.value) });
      } catch (error) {
        problem.hidden = false;
        problem.textContent = `The arguments are not valid JSON: ${error.message}`;
      }
    };
    args.addEventListener("input", () => { edited.disabled = args.value.trim() === original.trim(); });
    const edited = h("button.button.small", { type: "button", disabled: true, onclick: approveEdited }, "Approve with edits");
    return h("div.approval.card", { role: "group", dataset: { interruptId: interrupt.id }, "aria-label": `approve ${call.name}` },
      h("div.approval-head", {}, h("span.chip", { dataset: { tone: "warn" } }, "approval needed"), h("code", {}, call.name)),
      interrupt.message ? h("p.muted", {}, interrupt.message) : null,
      decided ? h("p", {}, decided.approved ? "Approved — waiting for the other decisions." : "Denied — waiting for the other decisions.")
        : [
          args, problem,
          h("div.approval-actions", {},
            h("button.button.primary.small", { type: "button", onclick: () => decide({ approved: true }) }, "Approve"),
            edited,
            reason,
            h("button.button.danger.small", { type: "button", onclick: () => decide({ approved: false, reason: reason.value || "Denied in the playground." }) }, "Deny")),
        ]);
  }
}
