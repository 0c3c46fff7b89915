// The context footprint page: what the Tier-1 text saves against every tool's full schema.

import { el, fill, intFormat, percent, replace, table, td, tokens } from "/ui/assets/dom.js";
import { agentSelect, api, query } from "/ui/assets/api.js";

export async function renderFootprint(page) {
  const [agentLabel, agent] = agentSelect("footprint-agent");
  const body = el("div");
  page.section.append(el("div", { class: "toolbar" }, agentLabel, agent), body);

  async function refresh(load) {
    const path = `/ui/api/footprint${load ? "/load" : ""}?${query({ agent: agent.value })}`;
    page.section.setAttribute("aria-busy", "true");
    try {
      const fp = await api(path, load ? { method: "POST" } : undefined);
      replace(body, footprintView(fp, () => refresh(true).catch(page.fail)));
      page.clear();
    } finally {
      page.section.removeAttribute("aria-busy");
    }
  }
  agent.addEventListener("change", () => refresh(false).catch(page.fail));
  await refresh(false);
}

/** The footprint's parts: the saving, totals, Tier-1 text, meta-tools, chart and tables. */
function footprintView(fp, onLoad) {
  const parts = [];
  const load = fp.unknown_tools > 0
    ? el("button", {
      id: "footprint-load", type: "button",
      onclick: (e) => {
        const button = e.currentTarget;
        button.disabled = true;
        button.textContent = "Counting…";
        onLoad().finally(() => { button.disabled = false; button.textContent = "Load everything and count"; });
      },
    }, "Load everything and count")
    : null;
  parts.push(el("div", { class: "saving" },
    el("p", { class: "big" }, el("span", { id: "footprint-saving" }, percent(fp.saving_percent))),
    el("p", null, `fewer tokens for agent “${fp.agent}” with the Tier-1 text than with every tool's full schema`,
      fp.unknown_tools > 0 ? ` (${intFormat.format(fp.unknown_tools)} tools not loaded yet: their schemas are not counted)` : "",
      "."),
    load));

  const totals = table("footprint-totals", "Tokens by encoding", ["What", "#o200k", "#cl100k"]);
  const total = (label, c) => el("tr", null, el("th", { scope: "row" }, label), td(tokens(c?.o200k), true), td(tokens(c?.cl100k), true));
  fill(totals.tbody, [total("Tier-1 text", fp.tier1_tokens), total("Progressive", fp.progressive), total("Full schemas", fp.full)], 3, "");
  const meta = table("footprint-meta", "Meta-tools (fixed cost)", ["Meta-tool", "#o200k", "#cl100k"]);
  fill(meta.tbody, (fp.meta_tools ?? []).map((m) =>
    el("tr", null, td(el("code", null, m.name)), td(tokens(m.cost?.o200k), true), td(tokens(m.cost?.cl100k), true))), 3, "No meta-tools.");
  parts.push(el("div", { class: "columns" }, totals.node, meta.node));

  parts.push(el("details", { class: "tier1" },
    el("summary", null, `Tier-1 text (${tokens(fp.tier1_tokens?.o200k)} tokens o200k)`),
    el("pre", { id: "footprint-tier1", tabindex: "0" }, fp.tier1 ?? "")));

  const resources = [...(fp.resources ?? [])].sort((a, b) => (b.full?.o200k ?? 0) - (a.full?.o200k ?? 0));
  parts.push(el("h2", null, "Where the full tokens go"), footprintChart(resources));

  const res = table("footprint-resources", "Per resource", ["Resource", "Category", "#Tools", "#Full o200k", "#Full cl100k", "#Progressive o200k", "#Not loaded"]);
  fill(res.tbody, resources.map((r) => el("tr", null, td(r.name), td(r.category), td(tokens(r.tools), true),
    td(tokens(r.full?.o200k), true), td(tokens(r.full?.cl100k), true), td(tokens(r.progressive?.o200k), true),
    td(tokens(r.unknown), true))), 7, "No resources.");
  parts.push(res.node);

  const tl = table("footprint-tools", "Per tool (full schema)", ["Tool", "Origin", "Category", "#o200k", "#cl100k"]);
  fill(tl.tbody, (fp.tools ?? []).map((t) => el("tr", { dataset: { loaded: String(!!t.full) } },
    td(el("code", null, t.name)), td(t.origin), td(t.category),
    ...(t.full
      ? [td(tokens(t.full.o200k), true), td(tokens(t.full.cl100k), true)]
      : [el("td", { colspan: 2, class: "num muted" }, "not loaded yet")]))), 5, "No tools.");
  parts.push(tl.node);
  return parts;
}

/** Horizontal bars (CSSOM widths) of each resource's full o200k tokens. */
function footprintChart(resources) {
  const max = Math.max(1, ...resources.map((r) => r.full?.o200k ?? 0));
  const summary = resources.map((r) => `${r.name}: ${tokens(r.full?.o200k)}`).join("; ");
  const rows = resources.map((r) => {
    const bar = el("span", { class: "bar" });
    bar.style.width = `${((r.full?.o200k ?? 0) / max) * 100}%`;
    return el("div", { class: "chart-row" },
      el("span", { class: "chart-label" }, r.name),
      el("span", { class: "chart-track" }, bar),
      el("span", { class: "chart-value" }, tokens(r.full?.o200k), r.unknown ? ` + ${r.unknown} not loaded` : ""));
  });
  return el("div", {
    id: "footprint-chart", class: "chart", role: "img",
    "aria-label": `Full-schema tokens (o200k) per resource. ${summary || "No resources."}`,
  }, rows.length ? rows : el("p", { class: "muted" }, "No resources."));
}
