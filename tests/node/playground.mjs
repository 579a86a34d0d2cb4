// Drives the playground at `/` in Debian's headless Chromium (playwright-core, no downloaded browser)
// like a person would: `node playground.mjs <scenario> <hub url>` prints ONE JSON document of what
// the page showed. Environment: PLAYGROUND_USER / PLAYGROUND_PASSWORD (a staff member of the tenant),
// AGUI_KEY (the tenant's key, for the "someone else" REST writes), ARTIFACTS (screenshot folder).
// Driven by tests/agui_app/transports/site/test_playground.py.
import { chromium } from "playwright-core";
import net from "node:net";
import { createInterface } from "node:readline";

const [scenario, hub] = process.argv.slice(2);
const { PLAYGROUND_USER, PLAYGROUND_PASSWORD, AGUI_KEY, ARTIFACTS } = process.env;
const TIMEOUT = 30000;
const script = (...steps) => JSON.stringify({ agui_script: steps });

async function signIn(page, url) {
  await page.goto(url);
  await page.click("#signin-link");
  await page.fill("#id_username", PLAYGROUND_USER);
  await page.fill("#id_password", PLAYGROUND_PASSWORD);
  await page.click("input[type=submit]");
  await page.waitForSelector("#app:not([hidden])", { timeout: TIMEOUT });
  await page.click('#agents [data-agent="assistant"]');
  await page.waitForSelector("#prompt:not([disabled])");
}

async function send(page, text) {
  await page.fill("#prompt", text);
  await page.press("#prompt", "Enter");
}

async function runEnds(page, status = "succeeded") {
  await page.waitForFunction((wanted) => document.querySelector("#run-status").textContent === wanted, status, { timeout: TIMEOUT });
}

const answer = (page) => page.$$eval(".msg.assistant .bubble", (bubbles) => bubbles.map((b) => b.textContent));
const threadId = (page) => page.textContent("#thread-id");
const stats = (page) => page.evaluate(() => window.playground.stats());
const treeText = (page) => page.textContent("#state-tree");

/** The conversation as the page shows it: one [kind, id] per message bubble and tool call, in order. */
const shownItems = (page) => page.$$eval("#messages > li.msg, #messages > li.tool", (items) => items
  .filter((i) => i.classList.contains("tool") || i.querySelector(".bubble").textContent !== "")
  .map((i) => (i.classList.contains("tool") ? ["tool", i.dataset.toolCallId] : [i.classList.contains("user") ? "user" : "assistant", i.dataset.messageId])));

/** The same, from the messages of a MESSAGES_SNAPSHOT. */
const storedItems = (messages) => messages.flatMap((m) => {
  if (m.role === "user") return [["user", m.id]];
  if (m.role !== "assistant") return [];
  return [...(m.content ? [["assistant", m.id]] : []), ...(m.toolCalls ?? []).map((call) => ["tool", call.id])];
});

/** Every WebSocket the page opens, and the event frames it receives without a seq (not logged). */
function watchSockets(page) {
  const seen = { opened: [], unlogged: [] };
  page.on("websocket", (socket) => {
    seen.opened.push(socket.url());
    socket.on("framereceived", ({ payload }) => {
      const frame = JSON.parse(payload);
      if (frame.type === "event" && frame.seq === undefined) seen.unlogged.push(frame.event);
    });
  });
  return seen;
}

/** Every text the connection indicator shows meanwhile (sampled every 40 ms); ``stop()`` returns them. */
function watchConnection(page) {
  const seen = new Set();
  const timer = setInterval(async () => seen.add(await page.textContent("#conn-text").catch(() => "")), 40);
  return async () => {
    clearInterval(timer);
    seen.add(await page.textContent("#conn-text"));
    return [...seen];
  };
}

/** Whether each part of a card (its children) lies inside the card's content box — within its
 * padding, to the half pixel — and whether the page scrolls sideways. */
async function fitsCard(page, card) {
  return page.$eval(card, (node) => {
    const box = node.getBoundingClientRect();
    const style = getComputedStyle(node);
    const left = box.left + parseFloat(style.borderLeftWidth) + parseFloat(style.paddingLeft);
    const right = box.right - parseFloat(style.borderRightWidth) - parseFloat(style.paddingRight);
    const shown = [...node.querySelectorAll(":scope > *, :scope > * > *")].filter((part) => part.getClientRects().length);
    const parts = shown.map((part) => {
      const rect = part.getBoundingClientRect();
      const spills = getComputedStyle(part).overflowX === "visible"; // its content shows past its box
      return { part: `${part.tagName.toLowerCase()}.${part.className}`, left: rect.left, right: rect.left + Math.max(rect.width, spills ? part.scrollWidth : 0) };
    });
    const outside = parts.filter((p) => p.left < left - 0.5 || p.right > right + 0.5);
    const root = document.documentElement;
    return { outside, content: [left, right], scrolls: root.scrollWidth > root.clientWidth };
  });
}

async function version(page, wanted) {
  await page.waitForFunction((v) => document.querySelector("#state-version").textContent === v, wanted, { timeout: TIMEOUT });
}

async function tab(page, name) {
  await page.click(`[data-tab="${name}"]`);
}

async function restPatch(thread, ops) {
  const response = await fetch(`${hub}/api/v1/threads/${thread}/state`, {
    method: "PATCH",
    headers: { Authorization: `Bearer ${AGUI_KEY}`, "Content-Type": "application/json-patch+json" },
    body: JSON.stringify(ops),
  });
  return { status: response.status, body: await response.json() };
}

// --- scenarios --------------------------------------------------------------------------------------

const scenarios = {
  async attach(page) {
    await signIn(page, hub);
    const buffer = Buffer.from(process.env.PNG_BASE64, "base64");
    await page.setInputFiles("#attach-input", { name: "dot.png", mimeType: "image/png", buffer });
    await page.waitForSelector("#attached:not([hidden])", { timeout: TIMEOUT });
    const chip = await page.textContent("#attached");
    await send(page, "What is this?");
    await runEnds(page);
    const users = await page.$$eval(".msg.user .bubble", (bubbles) => bubbles.map((b) => b.textContent));
    return { chip, users, answers: await answer(page), chipHidden: await page.isHidden("#attached"), threadId: await threadId(page) };
  },
  /** A delegation (the Python test gave `assistant` the sub-agent `helper`): a nested section. */
  async subagents(page) {
    await signIn(page, hub);
    const child = script({ call: "load_capability", args: { id: "weather" } }, { call: "get_forecast", args: { city: "Oslo" } }, { say: "Oslo is sunny." });
    await send(page, script({ call: "delegate", args: { agent: "helper", task: child } }, { say: "The helper checked." }));
    await runEnds(page);
    await page.waitForSelector('#messages li.subagent[data-status="success"]', { timeout: TIMEOUT });
    const section = await page.$eval("#messages li.subagent", (node) => ({
      agent: node.dataset.agent,
      open: node.querySelector("details").open,
      status: node.querySelector(".subagent-status").textContent,
      tools: [...node.querySelectorAll("li.tool")].map((i) => [i.dataset.tool, i.dataset.status]),
      text: [...node.querySelectorAll(".msg.assistant .bubble")].map((b) => b.textContent),
      follows: node.previousElementSibling?.dataset.tool ?? null,
    }));
    await page.click("#messages li.subagent > details > summary");
    const reopened = await page.$eval("#messages li.subagent > details", (d) => d.open);
    await page.screenshot({ path: `${ARTIFACTS}/playground-subagent.png` });
    return {
      section, reopened,
      topTools: await page.$$eval("#messages > li.tool", (items) => items.map((i) => i.dataset.tool)),
      answer: await answer(page),
    };
  },

  async weather(page) {
    await page.goto(hub);
    const beforeSignIn = await page.textContent("#conn-text");
    await signIn(page, hub);
    const noThread = { text: await page.textContent("#conn-text"), state: await page.getAttribute("#conn", "data-state") };
    await send(page, "What is the weather in Paris?");
    await runEnds(page);
    await tab(page, "capabilities");
    await page.waitForSelector('#tab-capabilities .loaded [data-capability="weather"]', { timeout: TIMEOUT });
    const agentDoc = JSON.parse(await page.textContent("#capabilities-doc"));
    await page.click('#tab-capabilities [data-which="thread"]');
    const threadDoc = JSON.parse(await page.textContent("#capabilities-doc"));
    await tab(page, "events");
    await page.selectOption("#event-filter", "TEXT_MESSAGE_CONTENT");
    const filtered = await page.$$eval("#event-list li:not([hidden])", (rows) => rows.map((r) => [Number(r.dataset.seq), r.dataset.type]));
    return {
      beforeSignIn, noThread,
      agentTools: agentDoc.tools.items.map((t) => t.name),
      threadTools: threadDoc.tools.items.map((t) => t.name),
      filtered,
      eventCount: await page.textContent("#event-count"),
      threadId: await threadId(page),
      answer: await answer(page),
      tools: await page.$$eval("#messages .tool", (items) => items.map((i) => i.dataset.tool)),
      loaded: await page.$$eval("#tab-capabilities .loaded li", (items) => items.map((i) => i.textContent)),
      catalog: await page.$$eval("#tab-capabilities .catalog li", (items) => items.map((i) => [i.dataset.capability, i.dataset.loaded])),
      connection: await page.textContent("#conn-text"),
      seqs: (await stats(page)).seqs,
    };
  },

  async state(page) {
    await signIn(page, hub);
    await page.evaluate(() => { window.notReloaded = true; });
    await send(page, script({ say: "Another thread." })); // one to switch to later
    await runEnds(page);
    const other = await threadId(page);
    await page.click("#new-thread");
    await send(page, script({ call: "load_capability", args: { id: "todos" } }, { call: "add_todo", args: { text: "buy milk" } }, { say: "Added." }));
    await page.waitForFunction(() => document.querySelector("#state-tree").textContent.includes("buy milk"), null, { timeout: TIMEOUT });
    await runEnds(page);
    await version(page, "v1");
    const versionAfterRun = await page.textContent("#state-version");
    const thread = await threadId(page);

    // an edit in the tree: click the value, type, Enter
    await page.click('#state-tree .value[data-path="/todos/0/text"]');
    await page.fill("#state-tree input.edit", '"buy oat milk"');
    await page.press("#state-tree input.edit", "Enter");
    await page.waitForFunction(() => document.querySelector("#state-tree").textContent.includes("buy oat milk"), null, { timeout: TIMEOUT });
    await version(page, "v2"); // v1: the run's add_todo, v2: this edit
    const versionAfterEdit = await page.textContent("#state-version");

    // a stale edit: the page starts editing at this version, someone else patches meanwhile
    await page.click('#state-tree .value[data-path="/todos/0/done"]');
    const otherPatch = await restPatch(thread, [{ op: "add", path: "/note", value: "from someone else" }]);
    await version(page, "v3"); // the page sees the other write live, while the edit is still open
    await page.fill("#state-tree input.edit", "true");
    await page.press("#state-tree input.edit", "Enter");
    await page.waitForSelector('#state-conflict[data-kind="conflict"]:not([hidden])', { timeout: TIMEOUT });
    await page.waitForFunction(() => document.querySelector("#state-tree").textContent.includes("from someone else"), null, { timeout: TIMEOUT });
    const result = {
      threadId: thread,
      versionAfterRun, versionAfterEdit,
      otherPatch,
      conflict: await page.textContent("#state-conflict"),
      tree: await treeText(page),
      version: await page.textContent("#state-version"),
      notReloaded: await page.evaluate(() => window.notReloaded === true),
    };
    result.phone = await screenshots(page);

    // the conflict was this thread's: another thread opens without it
    await page.click(`#threads [data-thread-id="${other}"]`);
    await page.waitForFunction((id) => document.querySelector("#thread-id").textContent === id, other, { timeout: TIMEOUT });
    await page.waitForSelector('#messages .msg.assistant .bubble:text-is("Another thread.")', { timeout: TIMEOUT });
    result.afterSwitch = {
      thread: await threadId(page) === other,
      bannerHidden: await page.isHidden("#state-conflict"),
      banner: await page.textContent("#state-conflict"),
    };
    return result;
  },

  async feedback(page) {
    await signIn(page, hub);
    // A slow first step: the run is active long enough to intervene in it.
    await send(page, script({ delay_ms: 2500, call: "get_forecast", args: { city: "Oslo" } }, { say: "Forecast sent." }));
    await page.waitForSelector("#intervene:not([hidden])", { timeout: TIMEOUT });
    const thread = await threadId(page);
    await page.fill("#intervene-input", "Use Celsius, please.");
    await page.click("#intervene button[type=submit]");
    await page.waitForFunction(() => document.querySelector("#messages").textContent.includes("The agent read your intervention."), null, { timeout: TIMEOUT });
    await runEnds(page);
    const interveneHiddenAfter = await page.getAttribute("#intervene", "hidden");
    const bar = ".msg.assistant:last-of-type .rate";
    await page.click(`${bar} .rate-down`);
    await page.waitForFunction((sel) => document.querySelector(`${sel} .rate-status`).textContent.startsWith("Thanks"), bar, { timeout: TIMEOUT });
    await page.fill(`${bar} .rate-comment`, "It answered in Fahrenheit.");
    await page.click(`${bar} .rate-send`);
    await page.waitForFunction((sel) => document.querySelector(`${sel} .rate-status`).textContent.includes("comment"), bar, { timeout: TIMEOUT });
    await page.screenshot({ path: `${ARTIFACTS}/playground-feedback-1280.png` });
    const pressed = await page.getAttribute(`${bar} .rate-down`, "aria-pressed");
    const messages = await page.textContent("#messages"); // page-only notices go with a reload
    // Reopened, the page shows the rating it gave.
    await page.reload();
    await page.waitForSelector("#app:not([hidden])", { timeout: TIMEOUT });
    await page.click(`#threads [data-thread-id="${thread}"]`);
    await page.waitForFunction((sel) => document.querySelector(`${sel}[data-rating="-1"]`), bar, { timeout: TIMEOUT });
    return {
      threadId: thread, pressed, interveneHiddenAfter,
      commentAfterReload: await page.inputValue(`${bar} .rate-comment`), messages,
    };
  },

  async approval(page) {
    const sockets = watchSockets(page);
    await signIn(page, hub);
    const connection = watchConnection(page);
    const refund = (amount, order = "A-1001") => script(
      { call: "load_capability", args: { id: "refunds" } },
      { call: "issue_refund", args: { order_id: order, amount } },
      { say: "Handled." },
    );
    const firstScript = refund(25);
    await send(page, firstScript);
    await runEnds(page, "awaiting approval");
    // what the page shows of the question is lost (as if it had missed it): the run's closing
    // MESSAGES_SNAPSHOT, which has it, puts it back
    await page.$eval("#messages .msg.user .bubble", (bubble) => { bubble.textContent = "(lost)"; });
    await page.click('#approvals button:text-is("Approve")');
    await runEnds(page);
    const approved = await page.$$eval('.tool[data-tool="issue_refund"] .result', (r) => r.map((x) => x.textContent));
    const restored = { shown: await page.textContent("#messages .msg.user .bubble"), sent: firstScript };

    await send(page, refund(40));
    await runEnds(page, "awaiting approval");
    const args = await page.inputValue("#approvals textarea");
    await page.fill("#approvals textarea", args.replace("40", "10"));
    await page.click('#approvals button:text-is("Approve with edits")');
    await runEnds(page);

    await send(page, refund(99));
    await runEnds(page, "awaiting approval");
    await page.fill('#approvals input[aria-label="reason"]', "A voucher was given instead.");
    await page.click('#approvals button:text-is("Deny")');
    await runEnds(page);
    const lastSnapshot = sockets.unlogged.findLast((event) => event.type === "MESSAGES_SNAPSHOT");
    const shown = {
      items: await shownItems(page),
      stored: storedItems(lastSnapshot?.messages ?? []),
      unloggedRows: await page.$$eval("#event-list li[data-unlogged]", (rows) => rows.map((r) => r.dataset.type)),
      connection: await connection(),
      ...(await stats(page)),
    };
    return {
      threadId: await threadId(page),
      approved, restored, shown,
      chips: await page.$$eval('.tool[data-tool="issue_refund"] summary .chip', (c) => c.map((x) => [x.textContent, x.dataset.tone])),
      sockets: { opened: sockets.opened.length, unlogged: sockets.unlogged.length },
      results: await page.$$eval('.tool[data-tool="issue_refund"] .result', (r) => r.map((x) => x.textContent)),
      answer: await answer(page),
    };
  },

  // an approval with an expiresAt (the agent's approval_ttl_seconds, set short by the test): the card
  // counts down, then turns approving off; a denial still resumes the run
  async approvalCountdown(page) {
    await signIn(page, hub);
    await send(page, script(
      { call: "load_capability", args: { id: "refunds" } },
      { call: "issue_refund", args: { order_id: "A-7", amount: 5 } },
      { say: "Handled." },
    ));
    await runEnds(page, "awaiting approval");
    const countdown = () => page.textContent("#approvals .countdown");
    const before = await countdown();
    const approveEnabledBefore = await page.isEnabled('#approvals button:text-is("Approve")');
    await page.waitForFunction(() => document.querySelector("#approvals .countdown")?.textContent.startsWith("expired"), null, { timeout: 15000 });
    const after = await countdown();
    const approveEnabledAfter = await page.isEnabled('#approvals button:text-is("Approve")');
    await page.fill('#approvals input[aria-label="reason"]', "Too late.");
    await page.click('#approvals button:text-is("Deny")');
    await runEnds(page);
    return {
      before, after, approveEnabledBefore, approveEnabledAfter,
      tone: await page.$$eval("#approvals .countdown", (c) => c.map((x) => x.dataset.tone)),
      results: await page.$$eval('.tool[data-tool="issue_refund"] .result', (r) => r.map((x) => x.textContent)),
    };
  },

  // long arguments: the editable box stays inside its card, on a desktop and on a phone
  async approvalLayout(page) {
    await signIn(page, hub);
    await send(page, script(
      { call: "load_capability", args: { id: "refunds" } },
      { call: "issue_refund", args: { order_id: `A-${"1234567890".repeat(30)}`, amount: 5 } },
      { say: "Handled." },
    ));
    await runEnds(page, "awaiting approval");
    const layout = { 1280: await fitsCard(page, "#approvals .approval") };
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(100);
    layout[390] = await fitsCard(page, "#approvals .approval");
    await page.$eval("#approvals", (box) => box.scrollIntoView());
    await page.screenshot({ path: `${ARTIFACTS}/playground-approval-390.png` });
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.click('#approvals button:text-is("Deny")');
    await runEnds(page);
    return { layout };
  },

  // calls the model makes to a tool that is not callable: pydantic-ai answers with a retry prompt
  async unknownTool(page) {
    await signIn(page, hub);
    const chips = () => page.$$eval('.tool[data-tool="no_such_tool"] summary .chip', (c) => c.map((x) => [x.textContent, x.dataset.tone]));
    await send(page, script({ call: "no_such_tool", args: {} }, { say: "First." }));
    await runEnds(page);
    const live = await chips(); // the first turn has no closing snapshot: the stream alone
    await send(page, script({ call: "no_such_tool", args: { x: 1 } }, { call: "load_capability", args: { id: "weather" } },
      { call: "get_forecast", args: { city: "Paris" } }, { say: "Second." }));
    await runEnds(page); // the run's closing snapshot came just before its end
    const afterSnapshot = await chips();
    const others = await page.$$eval('.tool:not([data-tool="no_such_tool"]) summary .chip', (c) => c.map((x) => x.textContent));
    const thread = await threadId(page);
    await page.reload(); // hydrated from the stored messages
    await page.waitForSelector("#app:not([hidden])", { timeout: TIMEOUT });
    await page.click(`#threads [data-thread-id="${thread}"]`);
    await page.waitForSelector('.tool[data-tool="get_forecast"] .result:not([hidden])', { timeout: TIMEOUT });
    const title = await page.getAttribute('.tool[data-tool="no_such_tool"] summary .chip', "title");
    await page.$$eval('.tool[data-tool="no_such_tool"]', (items) => items.at(-1).scrollIntoView());
    await page.screenshot({ path: `${ARTIFACTS}/playground-unknown-tool-1280.png` });
    return { threadId: thread, live, afterSnapshot, others, hydrated: await chips(), title, answer: await answer(page) };
  },

  async resume(page) {
    const proxy = await startProxy(new URL(hub));
    await signIn(page, proxy.url);
    const words = Array.from({ length: 40 }, (_, i) => `word${i + 1}`).join(" ");
    await send(page, script(
      { call: "load_capability", args: { id: "todos" } },
      { call: "add_todo", args: { text: "before the drop" } },
      { say: words, delay_ms: 1500 },
    ));
    await page.waitForFunction(() => document.querySelector("#state-tree").textContent.includes("before the drop"), null, { timeout: TIMEOUT });
    const seen = new Set();
    const watch = setInterval(async () => seen.add(await page.textContent("#conn-text").catch(() => "")), 40);
    const seqAtDrop = (await stats(page)).lastSeq;
    proxy.drop(4000); // every open connection cut; new ones refused for 4 s: the answer streams meanwhile
    await runEnds(page);
    await page.waitForTimeout(200);
    clearInterval(watch);
    seen.add(await page.textContent("#conn-text"));
    proxy.close();
    return {
      threadId: await threadId(page),
      words,
      answer: await answer(page),
      todos: await treeText(page),
      seqAtDrop,
      connection: [...seen],
      ...(await stats(page)),
    };
  },

  // no account: a user token minted by the tenant's backend, pasted in
  async pastedToken(page) {
    await page.goto(hub);
    await page.fill("#token-input", process.env.USER_TOKEN);
    await page.fill("#token-agent", "assistant");
    await page.click('#token-form button[type="submit"]');
    await page.waitForSelector("#app:not([hidden])", { timeout: TIMEOUT });
    await send(page, "What is the weather in Paris?");
    await runEnds(page);
    return { threadId: await threadId(page), answer: await answer(page), credential: await page.textContent("#credential") };
  },

  // with the WebSocket transport switched off: SSE, and Stop cancels a run on the server
  async sseStop(page) {
    await signIn(page, hub);
    await send(page, "What is the weather in Paris?");
    await runEnds(page);
    const connection = await page.textContent("#conn-text");
    await send(page, script({ say: "too late", delay_ms: 15000 }));
    await page.waitForSelector("#stop:not([hidden])", { timeout: TIMEOUT });
    await page.click("#stop");
    await runEnds(page, "cancelled");
    return {
      threadId: await threadId(page),
      connection,
      answer: await answer(page),
      notices: await page.$$eval("#messages .notice", (items) => items.map((i) => i.textContent)),
      seqs: (await stats(page)).seqs,
    };
  },

  // the server process is killed mid-run and a new one started (the test does it when asked): the
  // page, through the proxy, resumes on the new process and shows how the run ended
  async restart(page) {
    const proxy = await startProxy(new URL(hub));
    await signIn(page, proxy.url);
    await send(page, script(
      { call: "load_capability", args: { id: "todos" } },
      { call: "add_todo", args: { text: "before the restart" } },
      { say: "never said", delay_ms: 20000 },
    ));
    await page.waitForFunction(() => document.querySelector("#state-tree").textContent.includes("before the restart"), null, { timeout: TIMEOUT });
    const seqAtKill = (await stats(page)).lastSeq;
    const { port } = await ask({ ask: "restart" });
    proxy.retarget(port);
    await runEnds(page, "failed");
    await page.waitForTimeout(200);
    const connection = await page.textContent("#conn-text");
    const shown = await stats(page);
    proxy.close();
    return {
      threadId: await threadId(page),
      seqAtKill,
      connection,
      ...shown,
      errors: await page.$$eval("#messages .error", (items) => items.map((i) => i.textContent)),
      tools: await page.$$eval("#messages .tool", (items) => items.map((i) => i.dataset.tool)),
      todos: await treeText(page),
    };
  },

  async adminThread(page) {
    await page.goto(`${hub}/admin/login/?next=/admin/`);
    await page.fill("#id_username", PLAYGROUND_USER);
    await page.fill("#id_password", PLAYGROUND_PASSWORD);
    await page.click("input[type=submit]");
    await page.waitForSelector("#site-name");
    const viewSite = await page.getAttribute('a:text-is("View site")', "href");
    await page.goto(`${hub}${process.env.ADMIN_THREAD_PATH}`);
    const box = await page.$eval("#thread-state-form textarea", (t) => t.getBoundingClientRect().width);
    const scroll = await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth }));
    await page.screenshot({ path: `${ARTIFACTS}/admin-thread-1280.png`, fullPage: true });
    return { viewSite, textareaWidth: box, ...scroll };
  },
};

async function screenshots(page) {
  await tab(page, "state");
  await page.waitForTimeout(700); // the version chip's pulse
  await page.screenshot({ path: `${ARTIFACTS}/playground-1280.png` });
  await page.emulateMedia({ colorScheme: "dark" });
  await page.screenshot({ path: `${ARTIFACTS}/playground-1280-dark.png` });
  await page.emulateMedia({ colorScheme: "light" });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(100);
  const phone = await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth }));
  await page.screenshot({ path: `${ARTIFACTS}/playground-390.png`, fullPage: true });
  await page.setViewportSize({ width: 1280, height: 800 });
  return phone;
}

/** Ask the test driving this script (one JSON line out, one JSON line back on stdin). */
async function ask(question) {
  const lines = createInterface({ input: process.stdin });
  process.stdout.write(`${JSON.stringify(question)}\n`);
  const [answer] = await Promise.all([new Promise((resolve) => lines.once("line", resolve))]);
  lines.close();
  return JSON.parse(answer);
}

/** A TCP proxy in front of the hub, so a test can cut the page's connections like a network would. */
function startProxy(target) {
  const sockets = new Set();
  let refuseUntil = 0;
  let port = Number(target.port);
  const server = net.createServer((client) => {
    if (Date.now() < refuseUntil) { client.destroy(); return; }
    const upstream = net.connect(port, target.hostname);
    for (const [a, b] of [[client, upstream], [upstream, client]]) {
      sockets.add(a);
      a.on("error", () => b.destroy());
      a.on("close", () => { sockets.delete(a); b.destroy(); });
      a.pipe(b);
    }
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({
    url: `http://127.0.0.1:${server.address().port}/`,
    retarget(newPort) { port = newPort; for (const socket of sockets) socket.destroy(); },
    drop(refuseMs) { refuseUntil = Date.now() + refuseMs; for (const socket of sockets) socket.destroy(); },
    close() { for (const socket of sockets) socket.destroy(); server.close(); },
  })));
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-extensions", "--no-first-run"],
});
const consoleErrors = [];
const failedRequests = [];
let page;
try {
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.on("console", (message) => { if (message.type() === "error") consoleErrors.push(`${message.text()} (${message.location().url})`); });
  page.on("pageerror", (error) => consoleErrors.push(error.message));
  page.on("response", (response) => { if (response.status() >= 400) failedRequests.push(`${response.status()} ${response.url()}`); });
  const result = await scenarios[scenario](page);
  process.stdout.write(`${JSON.stringify({ ...result, consoleErrors, failedRequests })}\n`);
} catch (error) {
  const shown = await page?.evaluate(() => ({
    runStatus: document.querySelector("#run-status")?.textContent,
    connection: document.querySelector("#conn-text")?.textContent,
    messages: document.querySelector("#messages")?.innerText.slice(-2000),
    events: window.playground?.stats().seqs.length,
  })).catch(() => null);
  process.stdout.write(`${JSON.stringify({ failed: String(error.stack ?? error), shown, consoleErrors, failedRequests })}\n`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
