// Opens a page in Debian's headless Chromium (playwright-core, no downloaded browser) and waits for
// it to finish: `node browser.mjs <url>` prints ONE JSON document — the page's state
// (document.body.dataset.state), the text it showed, the AG-UI events it received, and the
// console errors Chromium reported (a CORS refusal is one).
import { chromium } from "playwright-core";

const url = process.argv[2];
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-extensions",
    "--no-first-run",
  ],
});
const consoleErrors = [];
try {
  const page = await browser.newPage();
  page.on("console", (message) => { if (message.type() === "error") consoleErrors.push(message.text()); });
  page.on("pageerror", (error) => consoleErrors.push(error.message));
  await page.goto(url);
  await page.waitForFunction(() => document.body?.dataset.state, null, { timeout: 30000 });
  const result = await page.evaluate(() => ({
    state: document.body.dataset.state,
    answer: document.getElementById("answer").textContent,
    events: window.aguiEvents ?? [],
  }));
  process.stdout.write(`${JSON.stringify({ ...result, consoleErrors, version: browser.version() })}\n`);
} finally {
  await browser.close();
}
