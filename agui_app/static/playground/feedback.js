// Feedback and interventions in the playground: 👍/👎 and a comment on each assistant message
// (POST /threads/{t}/feedback: a thumb sends at once, a comment replaces it with the comment), and
// an "intervene" box while a run is active (POST /threads/{t}/interventions).

import { h } from "./dom.js";

const enc = encodeURIComponent;

export class Ratings {
  /** ``api``: the page's Api; ``threadId()``: the open thread; ``onError(message, code)``. */
  constructor({ api, threadId, onError }) {
    this.api = api;
    this.threadId = threadId;
    this.onError = onError;
  }

  /** Add the rating bar to an assistant message's element (once). */
  attach(node, messageId) {
    if (node.querySelector(".rate")) return;
    const comment = h("input.rate-comment", { type: "text", maxLength: 2000, placeholder: "What was wrong or right? (optional)", hidden: true, "aria-label": "comment" });
    const send = h("button.button.small.rate-send", { type: "button", hidden: true }, "Send comment");
    const status = h("span.muted.rate-status", {});
    const bar = h("div.rate", { dataset: { messageId } },
      h("button.rate-up", { type: "button", title: "Helpful", "aria-label": "thumbs up", "aria-pressed": "false", onclick: () => this.rate(bar, 1) }, "👍"),
      h("button.rate-down", { type: "button", title: "Not helpful", "aria-label": "thumbs down", "aria-pressed": "false", onclick: () => this.rate(bar, -1) }, "👎"),
      comment, send, status);
    send.addEventListener("click", () => this.rate(bar, Number(bar.dataset.rating), comment.value.trim()));
    comment.addEventListener("keydown", (event) => { if (event.key === "Enter") { event.preventDefault(); send.click(); } });
    node.append(bar);
  }

  /** Send (or replace) this page's rating of the bar's message. */
  async rate(bar, rating, comment = "") {
    const body = { messageId: bar.dataset.messageId, rating, ...(comment ? { comment } : {}) };
    try {
      await this.api.json(`/threads/${enc(this.threadId())}/feedback`, { method: "POST", body });
    } catch (error) {
      this.onError(error.message, error.code);
      return;
    }
    this.show(bar, rating, comment);
  }

  show(bar, rating, comment) {
    bar.dataset.rating = String(rating);
    bar.querySelector(".rate-up").setAttribute("aria-pressed", String(rating === 1));
    bar.querySelector(".rate-down").setAttribute("aria-pressed", String(rating === -1));
    bar.querySelector(".rate-comment").hidden = false;
    bar.querySelector(".rate-send").hidden = false;
    bar.querySelector(".rate-status").textContent = comment ? "Thanks: rating and comment sent." : "Thanks: rating sent.";
  }

  /** After a thread opens: show this user's earlier ratings on its messages. */
  async hydrate(list) {
    const { items } = await this.api.json(`/threads/${enc(this.threadId())}/feedback?mine=true`);
    for (const item of items) {
      const bar = item.messageId && list.querySelector(`.rate[data-message-id="${CSS.escape(item.messageId)}"]`);
      if (bar) {
        this.show(bar, item.rating, item.comment);
        bar.querySelector(".rate-comment").value = item.comment;
      }
    }
  }
}

/** The "intervene" box: visible while a run is active; a message goes to that run. */
export class Intervene {
  constructor(form, { api, threadId, runId, onSent, onError }) {
    this.form = form;
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const input = form.querySelector("input");
      const message = input.value.trim();
      if (!message) return;
      try {
        await api.json(`/threads/${enc(threadId())}/interventions`, { method: "POST", body: { message, runId: runId() } });
        input.value = "";
        onSent(message);
      } catch (error) {
        onError(error.message, error.code);
      }
    });
  }

  show(active) {
    this.form.hidden = !active;
  }
}

/** What a ``CUSTOM agui.intervention`` event says in the conversation (null: nothing to show). */
export function interventionNotice(event) {
  const value = event.value ?? {};
  if (event.name !== "agui.intervention" || value.phase !== "delivered") return null;
  return value.kind === "state" ? "The agent was told of the state change." : "The agent read your intervention.";
}
