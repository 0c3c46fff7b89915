// The catalog page: resources and tools, filtered by kind and text.

import { DASH, asText, el, fill, table, td } from "/ui/assets/dom.js";
import { allTools, api } from "/ui/assets/api.js";

const TOOL_ROWS = 300; // tools table rows shown at once

export async function renderCatalog(page) {
  const [status, tools] = await Promise.all([api("/v1/status"), allTools()]);
  const perOrigin = new Map();
  for (const t of tools) perOrigin.set(t.origin, (perOrigin.get(t.origin) ?? 0) + 1);

  const resources = [
    ...(status.plugins ?? []).map((p) => ({
      kind: p.kind, name: p.name, version: p.version, origin: p.origin,
      state: [p.state, p.reason, p.privileges && `privileges: ${asText(p.privileges)}`].filter(Boolean).join(": "),
      compiled: p.compiled ? "yes" : "no", categories: (p.categories ?? []).join(", "), tools: perOrigin.get(p.name) ?? 0,
      access: p.access ?? "any", digest: p.digest ?? (p.origin.startsWith("bundled:") ? "bundled" : DASH),
    })),
    ...(status.mcp_servers ?? []).map(({ name, live, tools: count, ...rest }) => ({
      kind: "mcp", name, version: DASH, origin: live ? "live server" : "saved tool list",
      state: Object.values(rest).map(asText).join(": ") || DASH, compiled: DASH, categories: DASH, tools: count,
      access: DASH, digest: DASH,
    })),
    ...(status.rejected ?? []).map((r) => ({
      kind: "rejected", name: DASH, version: DASH, origin: r.origin, state: `rejected: ${r.reason}`,
      compiled: DASH, categories: DASH, tools: DASH, access: DASH, digest: DASH,
    })),
  ];

  const kinds = ["all", "tool", "connector", "database", "mcp", "rejected"];
  const kind = el("select", { id: "catalog-kind" }, kinds.map((k) => el("option", { value: k }, k)));
  const search = el("input", { id: "catalog-filter", type: "search", placeholder: "name, origin, category…" });
  const counts = el("p", { class: "muted", role: "status" });

  const res = table("catalog-resources", "Resources",
    ["Kind", "Name", "Version", "Origin", "Digest", "State", "Compiled", "Access", "Categories", "#Tools"]);
  // A digest is long: its first 12 hex digits, the whole one on hover.
  const digest = (d) => (d.length === 64 ? el("code", { title: d }, d.slice(0, 12)) : d);
  const resRows = resources.map((r) => {
    const tr = el("tr", { class: r.kind === "rejected" || r.state.startsWith("stale") || r.state.startsWith("failing") ? "warn" : null },
      td(r.kind), td(r.name), td(r.version), td(r.origin), td(digest(r.digest)), td(r.state), td(r.compiled),
      td(r.access), td(r.categories), td(r.tools, true));
    return { tr, kind: r.kind, text: Object.values(r).join(" ").toLowerCase() };
  });
  fill(res.tbody, resRows.map((r) => r.tr), 10, "No resources.");

  const tl = table("catalog-tools", "Tools", ["Name", "Origin", "Category", "Summary"]);
  const toolText = tools.map((t) => `${t.name} ${t.origin} ${t.category} ${t.summary}`.toLowerCase());
  const toolRow = (t) => el("tr", null, td(el("code", null, t.name)), td(t.origin), td(t.category), td(t.summary));

  function apply() {
    const needle = search.value.trim().toLowerCase();
    let shownRes = 0;
    for (const r of resRows) {
      r.tr.hidden = !((kind.value === "all" || r.kind === kind.value) && r.text.includes(needle));
      if (!r.tr.hidden) shownRes += 1;
    }
    // A large catalog: the first TOOL_ROWS matches only; the filter narrows the rest down.
    const matching = tools.filter((t, i) => toolText[i].includes(needle));
    fill(tl.tbody, matching.slice(0, TOOL_ROWS).map(toolRow), 4, "No tools.");
    counts.textContent = `${shownRes} of ${resRows.length} resources shown; ${matching.length} of ${tools.length} tools match` +
      (matching.length > TOOL_ROWS ? `, the first ${TOOL_ROWS} shown (filter to narrow).` : ".");
  }
  kind.addEventListener("change", apply);
  search.addEventListener("input", apply);
  apply();

  page.section.append(
    el("p", { class: "muted" }, `Catalog version ${status.version}, revision ${status.revision}.`),
    el("div", { class: "toolbar" },
      el("label", { for: "catalog-kind" }, "Kind"), kind,
      el("label", { for: "catalog-filter" }, "Filter"), search),
    counts, res.node, tl.node);
}
