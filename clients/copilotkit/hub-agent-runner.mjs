// A CopilotKit (v2 runtime) AgentRunner whose threads live in AG-UI Hub.
//
// CopilotKit's runtime hands every run, hydration ("connect"), running check and Stop of a thread
// to its AgentRunner; its default InMemoryAgentRunner keeps threads in the Node process, so a
// refresh after a restart forgets them and Stop cannot reach the hub. This runner delegates all
// four to the hub:
//   run       → POST /api/v1/agents/{agent}           (the AG-UI endpoint, SSE)
//   connect   → POST /api/v1/agents/{agent}/connect   (stored state + messages, then a run in flight)
//   isRunning → GET  /api/v1/threads/{thread}         (status "running")
//   stop      → POST /api/v1/threads/{thread}/runs/{run}/cancel, then waits until it ended
// A stream that breaks before its run's terminal event resumes from its last `id:` (the seq cursor)
// with GET /api/v1/threads/{thread}/events and Last-Event-ID, so no event is lost or repeated.

import { Observable } from "rxjs";

const TERMINAL = new Set(["RUN_FINISHED", "RUN_ERROR"]);

/** An error the hub answered before a stream opened (its `{"error": {code, message, details}}`). */
export class HubError extends Error {
  /** @param {number} status @param {{code?: string, message?: string, details?: unknown}} error */
  constructor(status, error) {
    super(`AG-UI Hub answered ${status}: ${error?.code ?? "error"}: ${error?.message ?? ""}`);
    this.name = "HubError";
    this.status = status;
    this.code = error?.code;
    this.details = error?.details;
  }
}

/**
 * Splits an SSE byte stream into `{id, data}` frames (LF framing; comments skipped).
 * @param {ReadableStream<Uint8Array>} body
 * @returns {AsyncGenerator<{id: number | null, data: any}>}
 */
async function* frames(body) {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let id = null;
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("id: ")) id = Number(line.slice(4));
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length) yield { id, data: JSON.parse(data.join("\n")) };
    }
  }
}

export class HubAgentRunner {
  /**
   * @param {object} options
   * @param {string} options.baseUrl the hub, e.g. "https://hub.example.com"
   * @param {string | (() => string | Promise<string>)} options.apiKey a tenant key (or a user token), or a function giving one
   * @param {(agentId: string) => string} [options.agentSlug] CopilotKit agent id → hub agent slug (default: the same)
   * @param {typeof fetch} [options.fetch]
   * @param {number} [options.stopWaitMs] how long `stop` waits for the hub to end the run (default 10 s)
   * @param {number} [options.maxResumes] reconnections of one broken stream (default 3)
   */
  constructor({ baseUrl, apiKey, agentSlug = (id) => id, fetch: fetchImpl = globalThis.fetch, stopWaitMs = 10_000, maxResumes = 3 }) {
    this.baseUrl = baseUrl.replace(/\/$/, "");
    this.apiKey = apiKey;
    this.agentSlug = agentSlug;
    this.fetch = fetchImpl;
    this.stopWaitMs = stopWaitMs;
    this.maxResumes = maxResumes;
    /** @type {Map<string, string>} the agent slug each thread was last run or connected with */
    this.agents = new Map();
  }

  /** @param {{threadId: string, agent: {agentId?: string}, input: import("@ag-ui/client").RunAgentInput}} request */
  run({ threadId, agent, input }) {
    const slug = this.#slug(threadId, agent?.agentId);
    return this.#stream(threadId, `/api/v1/agents/${encodeURIComponent(slug)}`, { ...input, threadId });
  }

  /** @param {{threadId: string, agentId?: string}} request */
  connect({ threadId, agentId }) {
    const slug = this.#slug(threadId, agentId);
    const input = {
      threadId,
      runId: `connect-${crypto.randomUUID()}`,
      state: {},
      messages: [],
      tools: [],
      context: [],
      forwardedProps: {},
      protocolVersion: "1.0",
    };
    return this.#stream(threadId, `/api/v1/agents/${encodeURIComponent(slug)}/connect`, input);
  }

  /** @param {{threadId: string}} request @returns {Promise<boolean>} */
  async isRunning({ threadId }) {
    const thread = await this.#thread(threadId);
    return thread?.status === "running";
  }

  /**
   * Cancels the thread's active run (only `runId`, when given) and waits until the hub ended it,
   * so the next run on the thread is not refused as busy.
   * @param {{threadId: string, runId?: string}} request @returns {Promise<boolean>}
   */
  async stop({ threadId, runId }) {
    const thread = await this.#thread(threadId);
    const active = thread?.activeRunId;
    if (!active || (runId !== undefined && runId !== active)) return false;
    const path = `/api/v1/threads/${encodeURIComponent(threadId)}/runs/${encodeURIComponent(active)}`;
    const cancel = await this.#request("POST", `${path}/cancel`);
    if (cancel.status === 409) return false; // it ended meanwhile
    if (!cancel.ok) throw new HubError(cancel.status, (await cancel.json().catch(() => ({}))).error);
    const deadline = Date.now() + this.stopWaitMs;
    while (Date.now() < deadline) {
      const run = await this.#request("GET", path);
      if (run.ok && (await run.json()).status !== "running") return true;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return true; // asked; the hub ends it on its side
  }

  #slug(threadId, agentId) {
    const slug = agentId ? this.agentSlug(agentId) : this.agents.get(threadId);
    if (!slug) throw new Error(`No agent known for thread ${threadId}: pass agentId`);
    this.agents.set(threadId, slug);
    return slug;
  }

  async #request(method, path, body, extraHeaders = {}, signal) {
    const key = typeof this.apiKey === "function" ? await this.apiKey() : this.apiKey;
    return this.fetch(`${this.baseUrl}${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        ...extraHeaders,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
  }

  async #thread(threadId) {
    const response = await this.#request("GET", `/api/v1/threads/${encodeURIComponent(threadId)}`);
    if (response.status === 404) return null;
    if (!response.ok) throw new HubError(response.status, (await response.json().catch(() => ({}))).error);
    return response.json();
  }

  /** The events of `path`'s SSE; a break before the open run's terminal event resumes from the cursor. */
  #stream(threadId, path, body) {
    return new Observable((subscriber) => {
      const abort = new AbortController();
      (async () => {
        let response = await this.#request("POST", path, body, { Accept: "text/event-stream" }, abort.signal);
        if (!response.ok) throw new HubError(response.status, (await response.json().catch(() => ({}))).error);
        let cursor = null;
        let openRun = null; // a run whose RUN_STARTED was passed on, and whose end was not
        for (let resumes = 0; ; resumes++) {
          const resuming = resumes > 0;
          try {
            for await (const frame of frames(response.body)) {
              if (frame.id !== null) cursor = frame.id;
              const event = frame.data;
              if (event.type === "RUN_STARTED") openRun = event.runId;
              subscriber.next(event);
              if (TERMINAL.has(event.type)) {
                openRun = null;
                if (resuming) break; // the events endpoint goes on following the log: we are done
              }
            }
          } catch (error) {
            if (abort.signal.aborted || resumes >= this.maxResumes || cursor === null || openRun === null) throw error;
          }
          if (openRun === null || resumes >= this.maxResumes || abort.signal.aborted) break;
          const events = `/api/v1/threads/${encodeURIComponent(threadId)}/events`;
          response = await this.#request("GET", events, undefined, { "Last-Event-ID": String(cursor) }, abort.signal);
          if (!response.ok) throw new HubError(response.status, (await response.json().catch(() => ({}))).error);
        }
        subscriber.complete();
      })().catch((error) => {
        if (!abort.signal.aborted) subscriber.error(error);
      });
      return () => abort.abort();
    });
  }
}
