// Pending approvals: a run that called a `requires_approval` tool ended with an `interrupt`
// outcome. Each interrupt gets approve / deny (with a reason) / approve with edited arguments; once
// every open interrupt has a decision, the run resumes with `RunAgentInput.resume`. An interrupt
// with `expiresAt` shows a countdown; once it runs out, approving is off (the server refuses it with
// 409 `interrupt_expired` and counts the call as denied).

import { fill, h, pretty } from "./dom.js";

/** The countdown text of an interrupt expiring at ``expiresAt`` (ISO 8601) seen at ``now`` (ms):
 * {text, expired}; ``null`` when it never expires. */
export function countdown(expiresAt, now = Date.now()) {
  if (!expiresAt) return null;
  const left = Math.ceil((Date.parse(expiresAt) - now) / 1000);
  if (!Number.isFinite(left)) return null;
  if (left <= 0) return { text: "expired: counts as denied", expired: true };
  const hours = Math.floor(left / 3600);
  const minutes = Math.floor((left % 3600) / 60);
  const seconds = String(left % 60).padStart(2, "0");
  const clock = hours > 0 ? `${hours}:${String(minutes).padStart(2, "0")}:${seconds}` : `${minutes}:${seconds}`;
  return { text: `expires in ${clock}`, expired: false };
}

export class Approvals {
  /** ``toolCall(toolCallId)`` → {name, args}; ``onResume(resume)`` starts the resuming run. */
  constructor(root, { toolCall, onResume }) {
    Object.assign(this, { root, toolCall, onResume });
    this.interrupts = [];
    this.decisions = new Map();
    this.timer = null;
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
    clearInterval(this.timer);
    this.timer = this.interrupts.some((item) => item.expiresAt) ? setInterval(() => this.tick(), 1000) : null;
    this.tick();
  }

  /** Update every card's countdown; an expired one can no longer be approved. */
  tick() {
    for (const chip of this.root.querySelectorAll?.("[data-expires-at]") ?? []) {
      const left = countdown(chip.dataset.expiresAt);
      if (!left) continue;
      chip.textContent = left.text;
      chip.dataset.tone = left.expired ? "error" : "warn";
      if (left.expired) {
        for (const button of chip.closest(".approval")?.querySelectorAll("button.approve") ?? []) button.disabled = true;
      }
    }
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
    const edited = h("button.button.small.approve", { type: "button", disabled: true, onclick: approveEdited }, "Approve with edits");
    const left = countdown(interrupt.expiresAt);
    return h("div.approval.card", { role: "group", dataset: { interruptId: interrupt.id }, "aria-label": `approve ${call.name}` },
      h("div.approval-head", {}, h("span.chip", { dataset: { tone: "warn" } }, "approval needed"), h("code", {}, call.name),
        left ? h("span.chip.countdown", { dataset: { tone: left.expired ? "error" : "warn", expiresAt: interrupt.expiresAt }, "aria-live": "off" }, left.text) : null),
      interrupt.message ? h("p.muted", {}, interrupt.message) : null,
      decided ? h("p", {}, decided.approved ? "Approved — waiting for the other decisions." : "Denied — waiting for the other decisions.")
        : [
          args, problem,
          h("div.approval-actions", {},
            h("button.button.primary.small.approve", { type: "button", disabled: Boolean(left?.expired), onclick: () => decide({ approved: true }) }, "Approve"),
            edited,
            reason,
            h("button.button.danger.small", { type: "button", onclick: () => decide({ approved: false, reason: reason.value || "Denied in the playground." }) }, "Deny")),
        ]);
  }
}
