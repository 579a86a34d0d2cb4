// One thread's live event stream, resumable by seq. WebSocket when the agent declares it
// (``transport.websocket``), else SSE (``GET …/events`` with ``Last-Event-ID``). Either way every
// event goes through ``ingest``: delivered once, in seq order — a repeat is dropped, a gap makes
// the stream resume from the last seq it delivered. An event with no seq is not in the log (a run's
// closing ``MESSAGES_SNAPSHOT``): it is delivered as it comes and moves no cursor.

import { runInput, sseFrames } from "./api.js";

const BACKOFF_MS = [250, 500, 1000, 2000, 4000];

export class ThreadStream {
  /** ``onEvent(seq, event)``, ``onStatus({state, transport, detail})``, ``onError(frameOrError)``. */
  constructor({ api, threadId, transport, after, onEvent, onStatus, onError }) {
    Object.assign(this, { api, threadId, transport, onEvent, onStatus, onError });
    this.lastSeq = after;
    this.closed = false;
    this.attempt = 0;
    this.resumes = 0;
    this.duplicates = 0;
    this.unlogged = 0; // events delivered without a seq
    this.socket = null;
    this.follow = null; // AbortController of the SSE follow request
  }

  start() {
    this.connect();
    return this;
  }

  close() {
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.pingTimer);
    this.socket?.close(1000);
    this.follow?.abort();
  }

  status(state, detail = "") {
    this.onStatus({ state, transport: this.transport, detail, lastSeq: this.lastSeq });
  }

  ingest(seq, event) {
    if (seq === null || seq === undefined) {
      // Not logged, so no gap and nothing to resume from: the server sends it on the run's own
      // stream right before the run's terminal event, which then comes with the next seq.
      this.unlogged += 1;
      this.onEvent(null, event);
      return;
    }
    if (seq <= this.lastSeq) {
      this.duplicates += 1;
      return;
    }
    if (seq !== this.lastSeq + 1) {
      this.reconnect(`gap after seq ${this.lastSeq}`);
      return;
    }
    this.lastSeq = seq;
    this.onEvent(seq, event);
  }

  connect() {
    if (this.closed) return;
    const resuming = this.attempt > 0;
    this.status(resuming ? "reconnecting" : "connecting", resuming ? `resuming after seq ${this.lastSeq}` : "");
    if (this.transport === "websocket") this.connectSocket(resuming);
    else this.connectSse(resuming);
  }

  /** The stream was lost: try again soon, from the last delivered seq. */
  reconnect(reason) {
    if (this.closed || this.retryTimer) return;
    this.socket?.close(4000);
    this.follow?.abort();
    this.socket = this.follow = null;
    clearInterval(this.pingTimer);
    const delay = BACKOFF_MS[Math.min(this.attempt, BACKOFF_MS.length - 1)];
    this.attempt += 1;
    this.status("reconnecting", `${reason}; resuming after seq ${this.lastSeq}`);
    this.retryTimer = setTimeout(() => { this.retryTimer = null; this.connect(); }, delay);
  }

  resumed(resuming) {
    if (resuming) this.resumes += 1;
    this.attempt = 0;
    this.status("live", this.resumes ? `resumed after seq ${this.resumedFrom} (${this.resumes}×)` : "");
  }

  // --- WebSocket ---------------------------------------------------------------------------------

  connectSocket(resuming) {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${location.host}/ws/v1/threads/${encodeURIComponent(this.threadId)}`);
    this.socket = socket;
    this.resumedFrom = this.lastSeq;
    socket.onopen = () => {
      socket.send(JSON.stringify({ type: "auth", apiKey: this.api.token }));
      socket.send(JSON.stringify({ type: "subscribe", after: this.lastSeq }));
      this.resumed(resuming);
      this.pingTimer = setInterval(() => socket.send('{"type":"ping"}'), 20000);
    };
    socket.onmessage = (message) => {
      if (socket !== this.socket) return; // a socket given up on (a gap): its late frames are not ours
      const frame = JSON.parse(message.data);
      if (frame.type === "event") this.ingest(frame.seq, frame.event);
      // On a staff page the cookie opens the socket as the session; the auth frame narrows it to
      // this token's user, so the page acts as the same user here as over REST.
      else if (frame.type === "error") this.onError(frame);
    };
    socket.onclose = async (close) => {
      if (socket !== this.socket || this.closed) return;
      if (close.code === 4401 && this.api.renew) this.api.token = await this.api.renew().catch(() => this.api.token);
      if ([4403, 4404, 4409].includes(close.code) || (close.code === 4401 && !this.api.renew)) {
        this.status("error", close.reason || `closed (${close.code})`);
        return;
      }
      this.reconnect(`socket closed (${close.code})`);
    };
  }

  waitOpen(timeoutMs = 8000) {
    return new Promise((resolve, reject) => {
      const started = Date.now();
      const check = () => {
        if (this.socket?.readyState === WebSocket.OPEN) resolve(this.socket);
        else if (Date.now() - started > timeoutMs) reject(new Error("the WebSocket is not connected"));
        else setTimeout(check, 50);
      };
      check();
    });
  }

  // --- SSE ------------------------------------------------------------------------------------------

  async connectSse(resuming) {
    const controller = new AbortController();
    this.follow = controller;
    this.resumedFrom = this.lastSeq;
    const path = `/threads/${encodeURIComponent(this.threadId)}/events`;
    try {
      const response = await this.api.fetch(path, {
        signal: controller.signal,
        headers: { Accept: "text/event-stream", "Last-Event-ID": String(this.lastSeq) },
      });
      this.resumed(resuming);
      for await (const { seq, event } of sseFrames(response)) this.ingest(seq, event);
      if (!controller.signal.aborted) this.reconnect("the stream ended");
    } catch (error) {
      if (controller.signal.aborted || this.closed) return;
      if (error.status === 404 || error.status === 403) this.status("error", error.message);
      else this.reconnect(error.message);
    }
  }

  // --- runs -------------------------------------------------------------------------------------------

  /** Start a run of ``agent``; its events arrive through the stream. Returns the input's runId. */
  async run(agent, options) {
    const input = runInput(this.threadId, options);
    if (this.transport === "websocket") {
      const socket = await this.waitOpen();
      socket.send(JSON.stringify({ type: "run", agent, input }));
      return input.runId;
    }
    // SSE: the POST answers the run's stream; the follow stream already delivers it, so this one is
    // only drained (the run keeps a client attached) — its refusals (409, 429…) throw before.
    const response = await this.api.fetch(`/agents/${encodeURIComponent(agent)}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify(input),
    });
    (async () => { for await (const _ of sseFrames(response)); })().catch(() => {});
    return input.runId;
  }
}

/** Hydrate a thread with ``POST /agents/{agent}/connect``: its messages, state, pending interrupt and
 * the cursor (the last seq the snapshot reflects) to follow from. */
export async function connectThread(api, agent, threadId) {
  const controller = new AbortController();
  const response = await api.fetch(`/agents/${encodeURIComponent(agent)}/connect`, {
    method: "POST",
    signal: controller.signal,
    headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify(runInput(threadId)),
  });
  const found = { cursor: 0, messages: [], state: {}, version: null, outcome: null };
  try {
    for await (const { seq, event } of sseFrames(response)) {
      if (seq !== null) found.cursor = seq;
      if (event.type === "MESSAGES_SNAPSHOT") found.messages = event.messages;
      if (event.type === "STATE_SNAPSHOT") Object.assign(found, { state: event.snapshot, version: event.metadata?.stateVersion });
      if (event.type === "RUN_FINISHED") {
        found.outcome = event.outcome ?? null;
        break;
      }
    }
  } finally {
    controller.abort();
  }
  return found;
}
