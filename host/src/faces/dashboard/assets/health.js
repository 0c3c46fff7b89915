// The health page: this replica's per-tool figures, the reload timeline and the upstream servers.

import { DASH, el, fill, ms, orDash, percent, replace, table, td, tokens } from "/ui/assets/dom.js";
import { api } from "/ui/assets/api.js";

export async function renderHealth(page) {
  const body = el("div");
  const refresh = async () => {
    const h = await api("/ui/api/health");
    replace(body, healthView(h));
    page.clear();
  };
  page.section.append(el("button", {
    id: "health-refresh", type: "button", class: "secondary", onclick: () => refresh().catch(page.fail),
  }, "Refresh"), body);
  await refresh();
}

function healthView(h) {
  const since = h.window?.since ? ` since ${h.window.since}` : "";
  const tools = table("health-tools", "Per tool", ["Tool", "Resource", "#Calls", "#Errors", "#Error rate", "#p50 ms", "#p95 ms", "#p99 ms", "Last error"]);
  fill(tools.tbody, (h.tools ?? []).map((t) => el("tr", null, td(el("code", null, t.tool)), td(t.resource),
    td(tokens(t.calls), true), td(tokens(t.errors), true), td(percent(typeof t.error_rate === "number" ? t.error_rate * 100 : null), true),
    td(ms(t.p50_ms), true), td(ms(t.p95_ms), true), td(ms(t.p99_ms), true),
    td(t.last_error ? `${t.last_error.outcome} at ${t.last_error.time}` : DASH))), 9, "No calls in the window.");

  const reloads = [...(h.reloads ?? [])].sort((a, b) => (b.revision - a.revision) || (b.version - a.version));
  const timeline = el("ol", { id: "health-reloads", class: "timeline" }, reloads.length ? null : el("li", null, "No reloads yet."), reloads.map((r) =>
    el("li", null, el("strong", null, `Version ${r.version}, revision ${r.revision}`), " ",
      el("time", { datetime: r.time }, r.time),
      r.changes?.length ? el("ul", null, r.changes.map((c) => el("li", null, c))) : el("p", { class: "muted" }, "No changes listed."))));

  const ups = table("health-upstreams", "Upstream MCP servers", ["Name", "Endpoint", "Connected", "#PID", "#Starts", "#Failures"]);
  fill(ups.tbody, (h.upstreams ?? []).map((u) => el("tr", null, td(u.name), td(orDash(u.endpoint)),
    el("td", { class: u.connected ? "ok" : "error" }, u.connected ? "yes" : "no"),
    td(orDash(u.pid), true), td(tokens(u.starts), true), td(tokens(u.failures), true))), 6, "No upstream servers.");

  return [
    el("p", { class: "note" }, `These figures are this replica's own (${h.replica}): `,
      `${tokens(h.window?.calls)} calls${since}. Other replicas keep their own.`),
    tools.node,
    el("h2", null, "Reloads, newest first"),
    timeline,
    ups.node,
  ];
}
