// Browser test of the operator dashboard at /ui: sign-in, every page (with axe-core),
// the footprint load, a search, a call through the form, a live call row, XSS probes, sign-out.
//
//   QUIVER_URL=http://127.0.0.1:PORT QUIVER_TOKEN=... CHROMIUM=/usr/bin/chromium SHOTS=/tmp/shots \
//   XSS_TOOL=... CALL_TOOL=calc__evaluate CALL_FIELD=expression CALL_VALUE="6 * 7" CALL_EXPECT=42 \
//   node tests/browser/dashboard.mjs
//
// Prints one JSON line {"ok":true,...} and exits 0, or says what failed and exits 1.
import { createRequire } from "node:module";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const require = createRequire(new URL("../servers/package.json", import.meta.url));
const { chromium } = require("playwright-core");
const { AxeBuilder } = require("@axe-core/playwright");

const env = (name, fallback) => {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`set ${name}`);
  return value;
};
const BASE = env("QUIVER_URL").replace(/\/+$/, "");
const TOKEN = env("QUIVER_TOKEN");
const CHROMIUM = env("CHROMIUM", "/usr/bin/chromium");
const SHOTS = env("SHOTS", "/tmp/quiver-dashboard-shots");
const XSS_TOOL = env("XSS_TOOL");
const CALL_TOOL = env("CALL_TOOL", "calc__evaluate");
const CALL_FIELD = env("CALL_FIELD", "expression");
const CALL_VALUE = env("CALL_VALUE", "6 * 7");
const CALL_EXPECT = env("CALL_EXPECT", "42");
const STEP_MS = 15_000;
const LIVE_LIMIT_MS = 1_000;
const LOCAL_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

const problems = []; // everything recorded that fails the run
let requests = 0;
let expecting401 = false; // only while submitting a wrong token

/** Run one step, printing its name and time; a thrown error names the step. */
async function step(name, fn) {
  const started = Date.now();
  try {
    const result = await fn();
    console.log(`ok   ${name} (${Date.now() - started} ms)`);
    return result;
  } catch (error) {
    throw new Error(`step "${name}" failed: ${error.message}`);
  }
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

/** axe-core on the current page: every serious or critical violation is a problem. */
async function axe(page, name) {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  for (const v of bad) {
    const where = v.nodes.slice(0, 5).map((n) => n.target.join(" ")).join(", ");
    problems.push(`axe on ${name}: ${v.impact} ${v.id}: ${v.help} (at ${where})`);
  }
  return bad.length;
}

const shot = (page, name) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

/** Go to a page through its nav link and wait until it has rendered its data. */
async function open(page, name) {
  await page.click(`nav a[href="#${name}"]`);
  await page.waitForSelector(`#page-${name} h1`);
  await page.waitForSelector(`#page-${name}[data-ready="true"]`);
  const alert = await page.$(`#page-${name} .alert:not([hidden])`);
  if (alert) throw new Error(`the page shows an error: ${await alert.textContent()}`);
}

/** Whether the visible page text holds `text`, and the XSS probe did not run. */
async function assertInert(page, where) {
  const xss = await page.evaluate(() => typeof window.__xss);
  check(xss === "undefined", `${where}: window.__xss is set: the probe ran`);
  const text = await page.innerText("body");
  check(text.includes("<script>"), `${where}: the literal text <script> is not visible`);
}

async function main() {
  mkdirSync(SHOTS, { recursive: true });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(STEP_MS);
    page.setDefaultNavigationTimeout(STEP_MS);

    context.on("request", (request) => {
      requests += 1;
      const url = new URL(request.url());
      if (["data:", "about:", "blob:"].includes(url.protocol)) return;
      if (!LOCAL_HOSTS.has(url.hostname)) problems.push(`request to a non-local host: ${request.url()}`);
    });
    context.on("requestfailed", (request) => {
      const error = request.failure()?.errorText ?? "";
      // Closing the live stream (leaving #live) aborts its request: expected.
      if (error.includes("ERR_ABORTED") && request.url().includes("/ui/api/calls/live")) return;
      problems.push(`request failed: ${request.method()} ${request.url()}: ${error}`);
    });
    context.on("response", (response) => {
      if (response.status() < 400) return;
      if (expecting401 && response.status() === 401) return;
      problems.push(`HTTP ${response.status()} for ${response.request().method()} ${response.url()}`);
    });
    page.on("console", (message) => {
      if (message.type() !== "error") return;
      if (expecting401 && message.text().includes("401")) return;
      problems.push(`console error: ${message.text()}`);
    });
    page.on("pageerror", (error) => problems.push(`uncaught error in the page: ${error.message}`));

    // 3. Sign-in: a wrong token is refused, the right one lands on /ui/ with a strict cookie.
    await step("sign-in", async () => {
      await page.goto(`${BASE}/ui/`, { waitUntil: "domcontentloaded" });
      check(page.url().endsWith("/ui/sign-in"), `/ui/ should land on /ui/sign-in, is at ${page.url()}`);
      await page.fill("#token", `wrong-${TOKEN}`);
      expecting401 = true;
      const refused = page.waitForResponse((r) => r.url().endsWith("/ui/sign-in") && r.request().method() === "POST");
      await page.click("#sign-in");
      const status = (await refused).status();
      check(status === 401, `a wrong token should give 401, gave ${status}`);
      await page.waitForSelector("#sign-in-error:not([hidden])");
      const message = (await page.textContent("#sign-in-error")).trim();
      check(message.length > 0, "the sign-in error is empty");
      await axe(page, "sign-in");
      await shot(page, "sign-in");

      await page.fill("#token", TOKEN);
      await Promise.all([page.waitForURL(/\/ui\/(#.*)?$/), page.click("#sign-in")]);
      const cookies = await context.cookies(`${BASE}/ui/`);
      check(cookies.length > 0, "no cookie after signing in");
      for (const c of cookies) {
        check(c.httpOnly, `cookie ${c.name} is not HttpOnly`);
        check(c.sameSite === "Strict", `cookie ${c.name} is SameSite=${c.sameSite}, not Strict`);
      }
    });
    expecting401 = false;
    await page.waitForSelector("nav a[href='#catalog']");

    // 4 and 9: the catalog, with the XSS probe as literal text.
    await step("catalog", async () => {
      await open(page, "catalog");
      await page.waitForSelector("#catalog-resources tbody tr");
      await page.waitForSelector("#catalog-tools tbody tr td:not(.empty)");
      await axe(page, "catalog");
      await shot(page, "catalog");
      await page.fill("#catalog-filter", XSS_TOOL);
      await page.waitForSelector(`#catalog-tools tbody tr:not([hidden]) code:text-is("${XSS_TOOL}")`);
      await assertInert(page, "catalog");
      await page.fill("#catalog-filter", "");
    });

    // 5. Footprint: the saving, then load everything and see the tables change.
    await step("footprint", async () => {
      await open(page, "footprint");
      await page.waitForSelector("#footprint-tools tbody tr");
      const saving = (await page.textContent("#footprint-saving")).trim();
      check(/\d.*%$/.test(saving), `#footprint-saving should be a percentage, is "${saving}"`);
      await page.waitForSelector("#footprint-chart[aria-label]");
      await axe(page, "footprint");
      await shot(page, "footprint");
      if (await page.$("#footprint-load")) {
        const unloaded = () => page.$$eval('#footprint-tools tr[data-loaded="false"]', (rows) => rows.length);
        const before = await unloaded();
        await page.$eval("#footprint-tools", (t) => { t.dataset.stale = "1"; });
        await page.click("#footprint-load");
        await page.waitForSelector("#footprint-tools:not([data-stale])");
        const after = await unloaded();
        check(after <= before, `loading left more tools unloaded (${before} → ${after})`);
        console.log(`     load: ${before} → ${after} tools not loaded yet`);
        await shot(page, "footprint-loaded");
      }
    });

    // 6. Search.
    await step("search", async () => {
      await open(page, "search");
      await page.fill("#search-query", "evaluate");
      await page.click("#search-form button[type=submit]");
      await page.waitForSelector("#search-hits tbody tr td:not(.empty)");
      await page.waitForSelector("#search-answer");
      await axe(page, "search");
      await shot(page, "search");
    });

    // 7. Call through the schema form.
    await step("call", async () => {
      await open(page, "call");
      await page.selectOption("#call-tool", CALL_TOOL);
      const field = `#call-form [name="${CALL_FIELD}"]`;
      await page.waitForSelector(field);
      await page.fill(field, CALL_VALUE);
      await page.click("#call-submit");
      await page.waitForSelector("#call-answer");
      const answer = await page.textContent("#call-answer");
      check(await page.getAttribute("#call-answer", "data-error") !== "true", `the call answered with an error: ${answer}`);
      check(answer.includes(CALL_EXPECT), `#call-answer should contain "${CALL_EXPECT}", is "${answer}"`);
      await axe(page, "call");
      await shot(page, "call");
      await page.selectOption("#call-tool", XSS_TOOL);
      await page.waitForFunction(() => document.getElementById("call-description")?.textContent.includes("<script>"));
      await assertInert(page, "call playground");
    });

    // 8. Live: a call made from Node shows up as a row within a second.
    const liveMs = await step("live", async () => {
      await open(page, "live");
      await page.waitForFunction(() => document.getElementById("live-status")?.textContent === "live");
      await page.evaluate((tool) => {
        const known = new Set([...document.querySelectorAll("#live-calls tr[data-call-id]")].map((r) => r.dataset.callId));
        const seen = () => [...document.querySelectorAll("#live-calls tr[data-call-id]")]
          .some((r) => r.dataset.tool === tool && !known.has(r.dataset.callId));
        new MutationObserver((_, observer) => {
          if (seen()) {
            window.__quiverRowAt = Date.now();
            observer.disconnect();
          }
        }).observe(document.getElementById("live-calls"), { childList: true, subtree: true });
      }, CALL_TOOL);
      // The other client's trace context: its trace id must show on the row.
      const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
      const traceparent = `00-${traceId}-00f067aa0ba902b7-01`;
      const response = await fetch(`${BASE}/v1/tools/${encodeURIComponent(CALL_TOOL)}/call`, {
        method: "POST",
        headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json", traceparent },
        body: JSON.stringify({ [CALL_FIELD]: CALL_VALUE }),
        signal: AbortSignal.timeout(STEP_MS),
      });
      await response.text();
      const done = Date.now();
      check(response.ok, `the call from Node answered HTTP ${response.status}`);
      const handle = await page.waitForFunction(() => window.__quiverRowAt, null, { timeout: 5_000 })
        .catch(() => { throw new Error(`no new ${CALL_TOOL} row in #live-calls within 5 s`); });
      const raw = (await handle.jsonValue()) - done; // below 0: the row came before the HTTP answer
      const latency = Math.max(0, raw);
      console.log(`     live row ${raw} ms after the call finished`);
      check(latency <= LIVE_LIMIT_MS, `the live row came ${latency} ms after the call (limit ${LIVE_LIMIT_MS} ms)`);
      const rows = await page.innerText("#live-calls tbody");
      check(rows.includes(traceId), `the live row does not show the caller's trace id ${traceId}`);
      await axe(page, "live");
      await shot(page, "live");
      return latency;
    });

    await step("health", async () => {
      await open(page, "health");
      await page.waitForSelector("#health-tools tbody tr");
      await page.waitForSelector("#health-upstreams");
      await page.waitForSelector("#health-reloads");
      await axe(page, "health");
      await shot(page, "health");
    });

    // 10. Sign-out.
    await step("sign-out", async () => {
      await Promise.all([page.waitForURL(/\/ui\/sign-in$/), page.click("#sign-out")]);
      expecting401 = true;
      const me = await context.request.get(`${BASE}/ui/api/me`, { maxRedirects: 0 });
      check(me.status() === 401, `/ui/api/me after signing out answered ${me.status()}, not 401`);
    });

    if (problems.length) throw new Error(`${problems.length} problem(s) recorded`);
    console.log(JSON.stringify({ ok: true, pages: 6, live_ms: liveMs, requests }));
  } finally {
    await browser.close();
  }
}

try {
  await main();
} catch (error) {
  console.log(`FAIL ${error.message}`);
  for (const p of problems) console.log(`  - ${p}`);
  process.exitCode = 1;
}
