// The playground: sign in (staff session → a user token, or a pasted token), pick an agent and a
// thread, talk to it, watch and edit its shared state, its capabilities and its event stream.
// Everything goes through the hub's public API (REST, the WebSocket, SSE) with the user token.

import { Approvals } from "./approvals.js";
import { Attachments } from "./attachments.js";
import { Conversation, partText, titleFor } from "./conversation.js";
import { $, fill, h, when } from "./dom.js";
import { Intervene, Ratings } from "./feedback.js";
import { EventLog, renderCapabilities } from "./inspector.js";
import { applyPatch } from "./jsonpatch.js";
import { connectThread, ThreadStream } from "./transport.js";
import { boot } from "./signin.js";
import { StateTree } from "./tree.js";

const EARLIER_EVENTS = 200;
const app = {
  api: null, agents: [], agent: null, transport: "websocket", threadId: null, stream: null,
  state: {}, version: 0, run: null, agentDoc: null, threadDoc: null, loaded: [], capsWhich: "agent",
};
const ratings = new Ratings({ api: null, threadId: () => app.threadId, onError: (message, code) => conversation.error(message, code) });
const conversation = new Conversation($("#messages"), { onAssistant: (node, id) => ratings.attach(node, id) });
const attachments = new Attachments();
const log = new EventLog($("#tab-events"));
const tree = new StateTree($("#state-tree"), { onPatch: sendPatch, version: () => app.version });
const approvals = new Approvals($("#approvals"), {
  toolCall: (id) => conversation.toolNames.get(id),
  onResume: (resume) => startRun({ resume }),
});

// --- agents and threads ----------------------------------------------------------------------------

function showApp(api, agents) {
  app.api = api;
  ratings.api = api;
  new Intervene($("#intervene"), {
    api, threadId: () => app.threadId, runId: () => app.run?.id ?? undefined,
    onSent: (message) => conversation.notice(`Sent to the run: ${message}`),
    onError: (message, code) => conversation.error(message, code),
  });
  app.agents = agents;
  $("#signin").hidden = true;
  $("#app").hidden = false;
  fill($("#agents"), agents.map((agent) => h("li", {},
    h("button.pick", { type: "button", dataset: { agent: agent.slug }, onclick: () => selectAgent(agent.slug) },
      h("span.pick-title", {}, agent.name || agent.slug), h("span.muted.mono", {}, agent.slug),
      agent.description ? h("span.pick-sub.muted", {}, agent.description) : null))));
  if (!agents.length) fill($("#agents"), h("li.muted", {}, "This tenant has no agents yet (admin → Agents)."));
  const remembered = localStorage.getItem("playground.agent");
  const chosen = agents.find((agent) => agent.slug === remembered) ?? (agents.length === 1 ? agents[0] : null);
  if (chosen) selectAgent(chosen.slug);
}

async function selectAgent(slug) {
  app.agent = slug;
  localStorage.setItem("playground.agent", slug);
  for (const button of document.querySelectorAll("#agents .pick")) button.setAttribute("aria-current", String(button.dataset.agent === slug));
  closeThread();
  $("#thread-title").textContent = "New conversation";
  enableComposer(true);
  app.agentDoc = await app.api.agentCapabilities(slug);
  app.transport = app.agentDoc.transport?.websocket ? "websocket" : "sse";
  renderCaps();
  await refreshThreads();
}

async function refreshThreads() {
  if (!app.agent) return;
  const page = await app.api.threads({ agent: app.agent, search: $("#thread-search").value.trim() });
  const items = page.results ?? page.items ?? [];
  fill($("#threads"), items.length ? items.map((thread) => h("li", {},
    h("button.pick", { type: "button", dataset: { threadId: thread.threadId }, "aria-current": String(thread.threadId === app.threadId),
      onclick: () => openThread(thread.threadId) },
      h("span.pick-title", {}, thread.title || thread.threadId),
      h("span.pick-sub.muted", {}, `${when(thread.updatedAt)} · v${thread.version} · #${thread.lastSeq}`))))
    : h("li.muted", {}, $("#thread-search").value ? "No thread matches." : "No threads yet: send a message."));
}

function closeThread() {
  app.stream?.close();
  Object.assign(app, { stream: null, threadId: null, run: null, state: {}, version: 0, threadDoc: null, loaded: [] });
  conversation.clear();
  approvals.clear();
  log.clear();
  tree.render({});
  setVersion(0);
  setRun(null);
  $("#thread-id").textContent = "";
  clearBanner(); // a conflict belongs to the thread it happened on
  connection({ state: "idle", transport: app.transport, detail: "" });
}

let opening = 0;
async function openThread(threadId) {
  const ticket = (opening += 1);
  const stale = () => ticket !== opening; // another thread was picked meanwhile
  closeThread();
  app.threadId = threadId;
  $("#thread-id").textContent = threadId;
  if (matchMedia("(max-width: 720px)").matches) $(".chat").scrollIntoView({ behavior: "smooth" });
  quietly(refreshThreads());
  const [detail, hydrated] = await Promise.all([app.api.thread(threadId), connectThread(app.api, app.agent, threadId)]);
  if (stale()) return;
  $("#thread-title").textContent = detail.title || "Untitled thread";
  conversation.snapshot(hydrated.messages);
  quietly(ratings.hydrate($("#messages")));
  if (hydrated.outcome?.type === "interrupt") {
    approvals.show(hydrated.outcome.interrupts);
    for (const item of hydrated.outcome.interrupts) conversation.awaiting(item.toolCallId);
    setRun({ id: null, status: "awaiting approval" });
  }
  app.state = hydrated.state;
  tree.render(app.state);
  if (Number.isInteger(hydrated.version)) setVersion(hydrated.version);
  else await resyncState(); // a hub without versioned state events
  const earlier = await app.api.events(threadId, Math.max(0, hydrated.cursor - EARLIER_EVENTS), EARLIER_EVENTS);
  if (stale()) return;
  for (const item of earlier.items) {
    if (item.seq > hydrated.cursor) continue;
    log.add(item.seq, item.event, { replayed: true });
    conversation.outcome(item.event); // a call the stored messages only say "error" of: denied, not run…
  }
  app.stream = new ThreadStream({
    api: app.api, threadId, transport: app.transport, after: hydrated.cursor,
    onEvent, onStatus: connection, onError: socketError,
  }).start();
  quietly(refreshCaps());
}

// --- runs ------------------------------------------------------------------------------------------

async function send(text) {
  if (!app.threadId) {
    const created = await app.api.createThread(app.agent, titleFor(text));
    await openThread(created.threadId);
  }
  const id = `msg-${crypto.randomUUID()}`;
  const parts = attachments.take();
  const content = parts.length ? [{ type: "text", text }, ...parts] : text;
  conversation.user(id, parts.length ? `${text}${parts.map(partText).join("")}` : text);
  await startRun({ messages: [{ id, role: "user", content }] });
}

async function startRun(options) {
  try {
    setRun({ id: null, status: "starting" });
    await app.stream.run(app.agent, options);
  } catch (error) {
    setRun(null);
    conversation.error(error.message, error.code);
  }
}

function onEvent(seq, event) {
  log.add(seq, event);
  conversation.apply(event);
  switch (event.type) {
    case "RUN_STARTED": approvals.clear(); setRun({ id: event.runId, status: "running" }); break;
    case "RUN_FINISHED": finished(event); break;
    case "RUN_ERROR": setRun({ id: app.run?.id, status: event.code === "cancelled" ? "cancelled" : "failed" }); afterRun(); break;
    case "STATE_SNAPSHOT": snapshot(event); break;
    case "STATE_DELTA": applyDelta(event); break;
    case "TOOL_CALL_RESULT": if (conversation.toolNames.get(event.toolCallId)?.name === "load_capability") quietly(refreshCaps()); break;
    default: break;
  }
}

/** An ``error`` frame: a refused run (409 thread_busy, interrupt_pending…) or a refused frame. */
function socketError(frame) {
  if (frame.ref === "run") setRun(null);
  conversation.error(frame.message, frame.code);
}

/** Background refreshes: a failure (the network is down, say) is not the user's problem; the next one heals it. */
function quietly(promise) {
  promise.catch((error) => console.warn("playground:", error.message));
}

function finished(event) {
  const outcome = event.outcome?.type;
  if (outcome === "interrupt") {
    approvals.show(event.outcome.interrupts);
    for (const item of event.outcome.interrupts) conversation.awaiting(item.toolCallId);
    setRun({ id: event.runId, status: "awaiting approval" });
  } else setRun({ id: event.runId, status: outcome === "cancelled" ? "cancelled" : "succeeded" });
  if (outcome === "cancelled") conversation.notice("Run stopped.");
  afterRun();
}

function afterRun() {
  app.run = app.run && { ...app.run, active: false };
  $("#stop").hidden = true;
  $("#intervene").hidden = true;
  quietly(refreshCaps());
  quietly(refreshThreads());
}

function setRun(run) {
  app.run = run && { ...run, active: ["running", "starting"].includes(run.status) };
  const chip = $("#run-status");
  chip.textContent = run ? run.status : "idle";
  chip.dataset.tone = { running: "running", starting: "running", succeeded: "ok", failed: "error", cancelled: "warn", "awaiting approval": "warn" }[run?.status] ?? "idle";
  $("#stop").hidden = !(run?.status === "running" && run.id);
  $("#intervene").hidden = !(run?.status === "running" && run.id);
}

async function stop() {
  if (!app.run?.id) return;
  $("#stop").disabled = true;
  try {
    const runId = app.run.id;
    await app.api.cancel(app.threadId, runId);
    // the run's end may have arrived while the cancel was answered: only a run still going is "stopping"
    if (app.run?.active && app.run.id === runId) $("#run-status").textContent = "stopping…";
  } catch (error) {
    conversation.error(error.message, error.code);
  } finally {
    $("#stop").disabled = false;
  }
}

// --- shared state ----------------------------------------------------------------------------------

function setVersion(version) {
  app.version = version;
  const chip = $("#state-version");
  chip.textContent = `v${version}`;
  chip.classList.remove("pulse");
  void chip.offsetWidth; // restart the animation
  chip.classList.add("pulse");
}

/** Every stored state event names the version it leaves the state at (``metadata.stateVersion``); a
 * predicted delta (``metadata.predictedState``) is no revision and moves none. Events come in log
 * order; only a ``GET /state`` answer (after a conflict) can run ahead of them, so an event older
 * than the version shown is already in the tree and is skipped. */
function stateVersionOf(event) {
  const version = event.metadata?.stateVersion;
  return Number.isInteger(version) && !event.metadata?.predictedState ? version : null;
}

function snapshot(event) {
  const version = stateVersionOf(event);
  if (version !== null && version < app.version) return;
  app.state = event.snapshot;
  tree.render(app.state);
  if (version !== null) setVersion(version);
}

function applyDelta(event) {
  const version = stateVersionOf(event);
  if (version !== null && version <= app.version) return;
  try {
    app.state = applyPatch(app.state, event.delta);
    tree.render(app.state);
    if (version !== null) setVersion(version);
  } catch {
    quietly(resyncState());
  }
}

/** The stored state and its version; an answer the stream has already overtaken is dropped. */
async function resyncState() {
  if (!app.threadId) return;
  const threadId = app.threadId;
  const { state, version } = await app.api.state(threadId);
  if (threadId !== app.threadId || version < app.version) return;
  app.state = state;
  tree.render(state);
  setVersion(version);
  quietly(refreshThreads()); // their versions and last seqs
}

function clearBanner() {
  const banner = $("#state-conflict");
  banner.hidden = true;
  fill(banner);
  delete banner.dataset.kind;
}

async function sendPatch(ops, baseVersion) {
  const banner = $("#state-conflict");
  const threadId = app.threadId;
  clearBanner();
  try {
    await app.api.patchState(app.threadId, ops, baseVersion); // the STATE_DELTA arrives on the stream
  } catch (error) {
    if (threadId !== app.threadId) return; // the page moved on to another thread meanwhile
    banner.hidden = false;
    banner.dataset.tone = "error";
    if (error.status === 412) {
      const now = error.details.currentVersion;
      fill(banner, h("strong", {}, "Conflict. "),
        `Your edit was based on v${baseVersion}, but the state is now at v${now}: someone changed it meanwhile. `,
        "Nothing was applied; the tree shows the current state — edit again.");
      banner.dataset.kind = "conflict";
      await resyncState();
    } else {
      fill(banner, h("strong", {}, "Not applied. "), error.message);
      banner.dataset.kind = "error";
    }
  }
}

// --- capabilities and connection ------------------------------------------------------------------

let capsRequest = 0;
async function refreshCaps() {
  if (!app.agent) return;
  const request = (capsRequest += 1);
  const [agentDoc, threadDoc, detail] = await Promise.all([
    app.api.agentCapabilities(app.agent),
    app.threadId ? app.api.threadCapabilities(app.threadId) : null,
    app.threadId ? app.api.thread(app.threadId) : null,
  ]);
  if (request !== capsRequest) return; // a later refresh is on its way
  Object.assign(app, { agentDoc, threadDoc, loaded: detail?.loadedCapabilities ?? [] });
  renderCaps();
}

function renderCaps() {
  renderCapabilities($("#tab-capabilities"), { ...app, which: app.capsWhich });
}

function connection({ state, transport, detail }) {
  const conn = $("#conn");
  conn.dataset.state = state;
  const name = transport === "websocket" ? "WebSocket" : "SSE";
  const label = { idle: "no thread", live: `live · ${name}`, connecting: `connecting · ${name}`, reconnecting: "reconnecting", error: "disconnected" }[state];
  $("#conn-text").textContent = detail ? `${label} · ${detail}` : label;
}

function enableComposer(enabled) {
  $("#prompt").disabled = !enabled;
  $("#send").disabled = !enabled;
  $("#attach").disabled = !enabled;
}

// --- wiring ----------------------------------------------------------------------------------------

$("#composer").addEventListener("submit", (event) => {
  event.preventDefault();
  const text = $("#prompt").value.trim();
  if (!text || !app.agent) return;
  $("#prompt").value = "";
  send(text).catch((error) => conversation.error(error.message, error.code));
});
$("#prompt").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) {
    event.preventDefault();
    $("#composer").requestSubmit();
  }
});
attachments.bind($("#attach"), $("#attach-input"), {
  api: () => app.api, onError: (error) => conversation.error(error.message, error.code),
});
$("#new-thread").addEventListener("click", () => app.agent && selectAgent(app.agent));
$("#stop").addEventListener("click", stop);
let searchTimer;
$("#thread-search").addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => quietly(refreshThreads()), 200);
});
$("#patch-form").addEventListener("submit", (event) => {
  event.preventDefault();
  try {
    sendPatch(JSON.parse($("#patch-input").value), app.version);
  } catch (error) {
    fill($("#state-conflict"), h("strong", {}, "Not JSON. "), error.message);
    $("#state-conflict").hidden = false;
  }
});
$("#tab-capabilities").addEventListener("click", (event) => {
  const which = event.target.closest("[data-which]")?.dataset.which;
  if (which) {
    app.capsWhich = which;
    renderCaps();
  }
});
for (const tab of document.querySelectorAll("[role=tab]")) {
  tab.addEventListener("click", () => {
    for (const other of document.querySelectorAll("[role=tab]")) {
      other.setAttribute("aria-selected", String(other === tab));
      $(`#tab-${other.dataset.tab}`).hidden = other !== tab;
    }
  });
}

// For tests and the curious: what the stream delivered.
window.playground = {
  app,
  stats: () => ({
    lastSeq: app.stream?.lastSeq ?? 0, duplicates: app.stream?.duplicates ?? 0, resumes: app.stream?.resumes ?? 0,
    unlogged: app.stream?.unlogged ?? 0, seqs: log.seqs(),
  }),
};
boot(showApp);
