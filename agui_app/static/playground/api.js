// The hub's public REST API, with the page's user token. A token that expires is renewed once
// (``renew``: the staff session mints a new one) and the request retried.

export class ApiError extends Error {
  constructor(status, body) {
    const error = body?.error ?? {};
    super(error.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = error.code ?? `http_${status}`;
    this.details = error.details ?? {};
  }
}

const enc = encodeURIComponent;

export class Api {
  constructor({ token, renew = null }) {
    this.token = token;
    this.renew = renew;
  }

  headers(extra = {}) {
    return { Authorization: `Bearer ${this.token}`, Accept: "application/json", ...extra };
  }

  /** fetch() under /api/v1 with the token; a non-2xx answer throws ApiError. Returns the Response. */
  async fetch(path, init = {}) {
    for (let attempt = 0; ; attempt += 1) {
      // no-cache: revalidate (ETag) rather than reuse a capabilities document cached for 5 s
      const response = await fetch(`/api/v1${path}`, { cache: "no-cache", ...init, headers: this.headers(init.headers) });
      if (response.ok) return response;
      const body = await response.json().catch(() => null);
      const error = new ApiError(response.status, body);
      if (response.status === 401 && this.renew && attempt === 0) {
        this.token = await this.renew();
        continue;
      }
      throw error;
    }
  }

  async json(path, { method = "GET", body, headers } = {}) {
    const init = { method, headers: { ...headers } };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers["Content-Type"] ??= "application/json";
    }
    const response = await this.fetch(path, init);
    return response.status === 204 ? null : response.json();
  }

  threads({ agent, search }) {
    const query = new URLSearchParams({ limit: "100" });
    if (agent) query.set("agent", agent);
    if (search) query.set("search", search);
    return this.json(`/threads?${query}`);
  }

  thread(threadId) { return this.json(`/threads/${enc(threadId)}`); }

  /** Upload a file (multipart, field ``file``); returns the stored file ({id, contentType, url, …}). */
  async uploadFile(file) {
    const form = new FormData();
    form.append("file", file, file.name);
    const response = await this.fetch("/files", { method: "POST", body: form });
    return response.json();
  }
  createThread(agent, title = "") { return this.json("/threads", { method: "POST", body: { agent, title } }); }
  renameThread(threadId, title) { return this.json(`/threads/${enc(threadId)}`, { method: "PATCH", body: { title } }); }
  state(threadId) { return this.json(`/threads/${enc(threadId)}/state`); }

  /** RFC 6902 ops based on ``baseVersion`` (If-Match): a stale version is a 412 ApiError. */
  patchState(threadId, ops, baseVersion) {
    return this.json(`/threads/${enc(threadId)}/state`, {
      method: "PATCH",
      body: ops,
      headers: { "Content-Type": "application/json-patch+json", "If-Match": `"${baseVersion}"` },
    });
  }

  agentCapabilities(agent) { return this.json(`/agents/${enc(agent)}/capabilities`); }
  threadCapabilities(threadId) { return this.json(`/threads/${enc(threadId)}/capabilities`); }
  run(threadId, runId) { return this.json(`/threads/${enc(threadId)}/runs/${enc(runId)}`); }
  cancel(threadId, runId) { return this.json(`/threads/${enc(threadId)}/runs/${enc(runId)}/cancel`, { method: "POST" }); }
  events(threadId, after, limit) { return this.json(`/threads/${enc(threadId)}/events?after=${after}&limit=${limit}`); }
}

/** A RunAgentInput: only the new messages (the server keeps the history), ``state: {}`` = no change. */
export function runInput(threadId, { messages = [], resume } = {}) {
  const input = {
    threadId, runId: `run-${crypto.randomUUID()}`, state: {}, messages, tools: [], context: [],
    forwardedProps: {}, protocolVersion: "1.0",
  };
  if (resume) input.resume = resume;
  return input;
}

/** Yields ``{seq, event}`` for each ``data:`` frame of an SSE response (keep-alive comments skipped). */
export async function* sseFrames(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      buffer += chunk.value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const lines = buffer.slice(0, end).split("\n");
        buffer = buffer.slice(end + 2);
        const data = lines.find((line) => line.startsWith("data:"));
        if (!data) continue;
        const id = lines.find((line) => line.startsWith("id:"));
        yield { seq: id ? Number(id.slice(3).trim()) : null, event: JSON.parse(data.slice(5).trim()) };
      }
    }
  } finally {
    reader.releaseLock();
  }
}
