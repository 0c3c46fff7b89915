// The search playground: what search_tools ranks and answers for a query.

import { DASH, el, fill, orDash, table, td } from "/ui/assets/dom.js";
import { agentSelect, api, query } from "/ui/assets/api.js";

export async function renderSearch(page) {
  const q = el("input", { id: "search-query", type: "search", required: true, placeholder: "what the model would ask for" });
  const detail = el("select", { id: "search-detail", value: "summary" },
    ["names", "summary", "full"].map((d) => el("option", { value: d }, d)));
  const limit = el("input", { id: "search-limit", type: "number", min: 1, max: 100, step: 1, value: "10" });
  const [agentLabel, agent] = agentSelect("search-agent");
  const results = el("div");
  const form = el("form", { id: "search-form", class: "toolbar" },
    el("label", { for: "search-query" }, "Query"), q,
    el("label", { for: "search-detail" }, "Detail"), detail,
    el("label", { for: "search-limit" }, "Limit"), limit,
    agentLabel, agent,
    el("button", { type: "submit" }, "Search"));

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const path = `/ui/api/search?${query({ q: q.value, detail: detail.value, limit: limit.value || 10, agent: agent.value })}`;
    api(path).then((data) => {
      const hits = table("search-hits", `Hits (ranker: ${data.ranker})`,
        ["#Rank", "Name", "Category", "#Score", "#BM25 rank", "#Semantic rank", "Summary"]);
      fill(hits.tbody, data.hits.map((h, i) => el("tr", null, td(i + 1, true), td(el("code", null, h.name)), td(h.category),
        td(typeof h.score === "number" ? h.score.toFixed(4) : DASH, true), td(orDash(h.lexical_rank), true),
        td(orDash(h.semantic_rank), true), td(h.summary))), 7, "No hits.");
      results.replaceChildren(hits.node,
        el("h2", null, "What search_tools answers the model", data.is_error ? el("span", { class: "badge" }, "error") : null),
        el("pre", { id: "search-answer", tabindex: "0", dataset: { error: String(!!data.is_error) } }, data.answer ?? ""));
      page.clear();
    }, page.fail);
  });
  page.section.append(form, results);
}
