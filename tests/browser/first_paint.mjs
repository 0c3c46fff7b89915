// First paint of the dashboard, for the bench runner (host/benches/quiver/
// dashboard.rs): loads QUIVER_URL/ui/ LOADS times in Debian's Chromium
// (each in a fresh browser context: nothing cached) and prints one JSON line
// with each load's first contentful paint and DOMContentLoaded, in ms.
import { createRequire } from "node:module";

const require = createRequire(new URL("../servers/node_modules/", import.meta.url));
const { chromium } = require("playwright-core");

const url = `${process.env.QUIVER_URL}/ui/#catalog`;
const loads = Number(process.env.LOADS || 20);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: ["--no-sandbox"] });
try {
  const paints = [];
  const ready = [];
  for (let i = 0; i < loads; i++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(url, { waitUntil: "domcontentloaded" });
    await page.waitForSelector("#page-catalog h1");
    const [paint, loaded] = await page.evaluate(async () => {
      // The paint entry can lag the DOM by a frame.
      for (let tries = 0; tries < 50; tries++) {
        const fcp = performance.getEntriesByName("first-contentful-paint")[0];
        if (fcp) {
          const nav = performance.getEntriesByType("navigation")[0];
          return [fcp.startTime, nav.domContentLoadedEventEnd];
        }
        await new Promise((r) => requestAnimationFrame(r));
      }
      return [null, null];
    });
    if (paint === null) throw new Error("no first-contentful-paint entry");
    paints.push(paint);
    ready.push(loaded);
    await context.close();
  }
  console.log(JSON.stringify({ first_paint_ms: paints, dom_content_loaded_ms: ready }));
} finally {
  await browser.close();
}
