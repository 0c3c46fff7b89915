// Browser test of the dashboard's sign-in through the authorization server (OAuth mode):
// /ui/ leads to the sign-in page, its link to the issuer, the issuer back to the redirect path,
// and the page there on to /ui/ with the session cookie (SameSite=Strict, which a browser
// withholds from a redirect chain begun on another site: this is what only a browser shows).
// Then the dashboard says who signed in, lists only what that principal may see, and signs out.
//
//   QUIVER_URL=http://127.0.0.1:PORT ISSUER_URL=http://127.0.0.1:PORT2 SUBJECT=ada \
//   CHROMIUM=/usr/bin/chromium SHOTS=/tmp/shots node tests/browser/oauth_sign_in.mjs
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
const ISSUER = env("ISSUER_URL").replace(/\/+$/, "");
const SUBJECT = env("SUBJECT");
const CHROMIUM = env("CHROMIUM", "/usr/bin/chromium");
const SHOTS = env("SHOTS", "/tmp/quiver-dashboard-shots");
const STEP_MS = 15_000;
const LOCAL_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

const problems = [];
let expecting401 = false; // only while checking that the sign-in ended

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

async function axe(page, name) {
  const results = await new AxeBuilder({ page }).analyze();
  for (const v of results.violations.filter((v) => v.impact === "serious" || v.impact === "critical")) {
    problems.push(`axe on ${name}: ${v.impact} ${v.id}: ${v.help}`);
  }
}

async function main() {
  mkdirSync(SHOTS, { recursive: true });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  const visited = [];
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(STEP_MS);
    page.setDefaultNavigationTimeout(STEP_MS);
    context.on("request", (request) => {
      const url = new URL(request.url());
      if (["data:", "about:", "blob:"].includes(url.protocol)) return;
      if (!LOCAL_HOSTS.has(url.hostname)) problems.push(`request to a non-local host: ${request.url()}`);
      if (request.isNavigationRequest()) visited.push(`${url.origin}${url.pathname}`);
    });
    context.on("response", (response) => {
      if (expecting401 && response.status() === 401) return;
      if (response.status() >= 400) problems.push(`HTTP ${response.status()} for ${response.url()}`);
    });
    page.on("console", (message) => {
      if (expecting401 && message.text().includes("401")) return;
      if (message.type() === "error") problems.push(`console error: ${message.text()}`);
    });
    page.on("pageerror", (error) => problems.push(`uncaught error in the page: ${error.message}`));

    await step("the dashboard leads to its sign-in page", async () => {
      await page.goto(`${BASE}/ui/`, { waitUntil: "domcontentloaded" });
      check(page.url() === `${BASE}/ui/sign-in`, `/ui/ should land on /ui/sign-in, is at ${page.url()}`);
      check((await page.$("#token")) === null, "OAuth mode shows no token form");
      await axe(page, "sign-in (OAuth)");
      await page.screenshot({ path: join(SHOTS, "sign-in-oauth.png"), fullPage: true });
    });

    await step("the issuer signs the person in and the dashboard opens", async () => {
      await Promise.all([page.waitForURL(/\/consent\?/), page.click("#sign-in")]);
      check(page.url().startsWith(ISSUER.replace(/:\d+$/, "")), `the sign-in form is not on the issuer's site: ${page.url()}`);
      await Promise.all([page.waitForURL(`${BASE}/ui/`), page.click("#consent")]);
      await page.waitForFunction(
        (subject) => document.getElementById("principal")?.textContent.startsWith(subject),
        SUBJECT,
      );
      check(visited.some((u) => u.startsWith(ISSUER)), `the browser never went to the issuer: ${visited.join(" → ")}`);
      check(new URL(ISSUER).hostname !== new URL(BASE).hostname, "the issuer must be another site than Quiver");
      const cookies = await context.cookies(`${BASE}/ui/`);
      const session = cookies.find((c) => c.name === "quiver_session");
      check(session !== undefined, `no session cookie: ${JSON.stringify(cookies)}`);
      check(session.httpOnly && session.sameSite === "Strict", `the session cookie: ${JSON.stringify(session)}`);
      const state = (await context.cookies(`${BASE}/ui/sign-in/callback`)).find((c) => c.name === "quiver_sign_in_state");
      check(state === undefined, "the state cookie outlived the sign-in");
    });

    const listed = await step("the catalog shows what the principal may see", async () => {
      await page.click('nav a[href="#catalog"]');
      await page.waitForSelector('#page-catalog[data-ready="true"]');
      const alert = await page.$("#page-catalog .alert:not([hidden])");
      check(alert === null, `the catalog page shows an error: ${alert && (await alert.textContent())}`);
      const tools = await page.evaluate(async () => (await (await fetch("/v1/tools")).json()).tools);
      const plugins = tools.filter((t) => t.includes("__")).map((t) => t.split("__")[0]);
      check(plugins.length > 0 && plugins.every((p) => p === "calc"), `tools beyond calc: ${tools.join(", ")}`);
      await axe(page, "catalog (OAuth)");
      await page.screenshot({ path: join(SHOTS, "catalog-oauth.png"), fullPage: true });
      return tools.length;
    });

    await step("signing out ends the sign-in", async () => {
      await Promise.all([page.waitForURL(`${BASE}/ui/sign-in`), page.click("#sign-out")]);
      expecting401 = true;
      const status = await page.evaluate(async () => (await fetch("/ui/api/me")).status);
      check(status === 401, `/ui/api/me after signing out: ${status}`);
    });

    if (problems.length > 0) throw new Error(`problems:\n  ${problems.join("\n  ")}`);
    console.log(JSON.stringify({ ok: true, visited: visited.length, listed }));
  } finally {
    await browser.close();
  }
}

main().catch((error) => {
  console.log(`FAIL ${error.message}`);
  process.exit(1);
});
