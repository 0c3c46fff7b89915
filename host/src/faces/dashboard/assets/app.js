// Quiver operator dashboard: one hash-routed page built with DOM calls only.
// Every text from the server goes in as a text node or an input's value, never as HTML.
(() => {
  "use strict";

  const state = { me: null, live: null };

  // ---------- DOM helpers ----------

  /** Append children: strings and numbers become text nodes; null/false are skipped. */
  function append(node, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  /** Replace a node's children (arrays may nest). */
  function replace(node, ...children) {
    node.replaceChildren();
    return append(node, children);
  }

  /** Make an element. attrs: `class`, `dataset`, `on<event>` handlers, `value`; the rest are attributes. */
  function el(tag, attrs, ...children) {
    const node = append(document.createElement(tag), children);
    for (const [key, value] of Object.entries(attrs ?? {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "dataset") Object.assign(node.dataset, value);
      else if (key === "value") node.value = value; // after the children: a select needs its options
      else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    return node;
  }

  const intFormat = new Intl.NumberFormat("en-US");
  const oneDecimal = new Intl.NumberFormat("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 });
  const DASH = "—";
  const tokens = (n) => (typeof n === "number" ? intFormat.format(n) : DASH);
  const ms = (n) => (typeof n === "number" ? oneDecimal.format(n) : DASH);
  const percent = (n) => (typeof n === "number" ? `${oneDecimal.format(n)} %` : DASH);
  const orDash = (v) => (v === null || v === undefined || v === "" ? DASH : String(v));
  const asText = (v) => (typeof v === "string" ? v : JSON.stringify(v));
  const pretty = (v) => JSON.stringify(v, null, 2);

  /** A table cell; `num` right-aligns it. */
  const td = (content, num = false) => el("td", num ? { class: "num" } : null, content);

  /** A table with `<th scope="col">` headers; a header starting with "#" is numeric. */
  function table(id, caption, headers) {
    const tbody = el("tbody");
    const head = headers.map((h) =>
      h.startsWith("#") ? el("th", { scope: "col", class: "num" }, h.slice(1)) : el("th", { scope: "col" }, h));
    const node = el("table", { id }, caption ? el("caption", null, caption) : null, el("thead", null, el("tr", null, head)), tbody);
    return { node, tbody };
  }

  /** Fill a tbody with rows, or one row saying there is nothing. */
  function fill(tbody, rows, columns, empty) {
    replace(tbody, rows.length ? rows : el("tr", null, el("td", { colspan: columns, class: "empty" }, empty)));
  }

  /** A labelled select of the configured agents. */
  function agentSelect(id) {
    const agents = state.me.agents?.length ? state.me.agents : [state.me.agent ?? "default"];
    const select = el("select", { id, value: state.me.agent ?? agents[0] }, agents.map((a) => el("option", { value: a }, a)));
    return [el("label", { for: id }, "Agent"), select];
  }

  const query = (params) =>
    new URLSearchParams(Object.entries(params).filter(([, v]) => v !== "" && v !== null && v !== undefined)).toString();

  // ---------- API ----------

  /**
   * Fetch JSON from the host with the session cookie. Non-GET requests carry the CSRF header.
   * A 401 goes to the sign-in page; other failures throw an Error with the server's message.
   * `acceptCall`: a 4xx/5xx whose body is a call answer (`is_error`) is returned, not thrown.
   */
  async function api(path, { method = "GET", body, acceptCall = false } = {}) {
    const headers = { Accept: "application/json" };
    const init = { method, headers, credentials: "same-origin" };
    if (method !== "GET") headers["X-CSRF-Token"] = state.me?.csrf ?? "";
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch {
      throw new Error(`Could not reach the server (${method} ${path}).`);
    }
    if (response.status === 401) {
      location.assign("/ui/sign-in");
      return new Promise(() => {}); // the page is going away: never settle
    }
    const text = await response.text();
    let data = text;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: keep the text
    }
    if (response.ok) return data;
    if (acceptCall && data && typeof data === "object" && "is_error" in data) return data;
    const reason = data?.error ? `${data.error}${data.fix ? ` (${data.fix})` : ""}` : `HTTP ${response.status} ${response.statusText}`;
    throw new Error(`${method} ${path}: ${reason}`);
  }

  /** Every tool in one line each, following `next_cursor`. */
  async function allTools() {
    const tools = [];
    let cursor = null;
    do {
      const page = await api(`/v1/tools/summary?${query({ limit: 500, cursor })}`);
      tools.push(...page.tools);
      cursor = page.next_cursor ?? null;
    } while (cursor);
    return tools;
  }

  // ---------- Catalog ----------

  const TOOL_ROWS = 300; // tools table rows shown at once

  async function renderCatalog(page) {
    const [status, tools] = await Promise.all([api("/v1/status"), allTools()]);
    const perOrigin = new Map();
    for (const t of tools) perOrigin.set(t.origin, (perOrigin.get(t.origin) ?? 0) + 1);

    const resources = [
      ...(status.plugins ?? []).map((p) => ({
        kind: p.kind, name: p.name, version: p.version, origin: p.origin,
        state: [p.state, p.reason, p.privileges && `privileges: ${asText(p.privileges)}`].filter(Boolean).join(": "),
        compiled: p.compiled ? "yes" : "no", categories: (p.categories ?? []).join(", "), tools: perOrigin.get(p.name) ?? 0,
      })),
      ...(status.mcp_servers ?? []).map(({ name, live, tools: count, ...rest }) => ({
        kind: "mcp", name, version: DASH, origin: live ? "live server" : "saved tool list",
        state: Object.values(rest).map(asText).join(": ") || DASH, compiled: DASH, categories: DASH, tools: count,
      })),
      ...(status.rejected ?? []).map((r) => ({
        kind: "rejected", name: DASH, version: DASH, origin: r.origin, state: `rejected: ${r.reason}`,
        compiled: DASH, categories: DASH, tools: DASH,
      })),
    ];

    const kinds = ["all", "tool", "connector", "database", "mcp", "rejected"];
    const kind = el("select", { id: "catalog-kind" }, kinds.map((k) => el("option", { value: k }, k)));
    const search = el("input", { id: "catalog-filter", type: "search", placeholder: "name, origin, category…" });
    const counts = el("p", { class: "muted", role: "status" });

    const res = table("catalog-resources", "Resources", ["Kind", "Name", "Version", "Origin", "State", "Compiled", "Categories", "#Tools"]);
    const resRows = resources.map((r) => {
      const tr = el("tr", { class: r.kind === "rejected" || r.state.startsWith("stale") || r.state.startsWith("failing") ? "warn" : null },
        td(r.kind), td(r.name), td(r.version), td(r.origin), td(r.state), td(r.compiled), td(r.categories), td(r.tools, true));
      return { tr, kind: r.kind, text: Object.values(r).join(" ").toLowerCase() };
    });
    fill(res.tbody, resRows.map((r) => r.tr), 8, "No resources.");

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

  // ---------- Context footprint ----------

  async function renderFootprint(page) {
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

  // ---------- Search playground ----------

  async function renderSearch(page) {
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

  // ---------- Call playground ----------

  class InputError extends Error {}
  let fieldSeq = 0;

  /** The form-able kind of a schema, or "json" for what only a JSON textarea can express. */
  function kindOf(s) {
    if (!s || typeof s !== "object" || s.oneOf || s.anyOf || s.allOf || s.$ref || s.not) return "json";
    if (Array.isArray(s.enum) && s.enum.length) return "enum";
    let type = s.type;
    if (Array.isArray(type)) {
      const real = type.filter((t) => t !== "null");
      type = real.length === 1 ? real[0] : null;
    }
    if (type === "object" || (!type && s.properties)) return s.properties && Object.keys(s.properties).length ? "object" : "json";
    if (type === "array") return s.items && typeof s.items === "object" && !Array.isArray(s.items) ? "array" : "json";
    return ["string", "integer", "number", "boolean"].includes(type) ? type : "json";
  }

  /** Show (or clear, with no message) a field's inline error; throw when there is one. */
  function fieldError(input, error, message) {
    error.textContent = message ?? "";
    error.hidden = !message;
    if (message) {
      input.setAttribute("aria-invalid", "true");
      throw new InputError(message, { cause: input });
    }
    input.removeAttribute("aria-invalid");
  }

  /**
   * One input (or fieldset) for a schema. Returns { node, read }; read() gives the value,
   * undefined to leave the field out, or throws InputError after showing it inline.
   */
  function schemaField(schema, name, path, required, item = false) {
    const s = schema && typeof schema === "object" ? schema : {};
    const kind = kindOf(s);
    const id = `call-f${++fieldSeq}`;
    const hint = s.description ? el("span", { class: "hint", id: `${id}-hint` }, s.description) : null;
    const mark = required && !item ? el("span", { class: "req" }, " (required)") : null;
    const error = el("span", { class: "field-error", id: `${id}-error`, hidden: true });
    const common = { id, name: path, "aria-describedby": [hint && `${id}-hint`, `${id}-error`].filter(Boolean).join(" ") };
    if (required) common["aria-required"] = "true";
    const wrap = (input, labelText = name) =>
      el("div", { class: "field" }, el("label", { for: id }, labelText, mark), hint, input, error);

    if (kind === "object") {
      const children = Object.entries(s.properties).map(([key, sub]) =>
        [key, schemaField(sub, key, path ? `${path}.${key}` : key, (s.required ?? []).includes(key))]);
      const node = el("fieldset", null, el("legend", null, name, mark), hint, children.map(([, f]) => f.node));
      const read = () => {
        const value = {};
        for (const [key, f] of children) {
          const v = f.read();
          if (v !== undefined) value[key] = v;
        }
        return !required && Object.keys(value).length === 0 ? undefined : value;
      };
      return { node, read };
    }

    if (kind === "array") {
      const list = el("ol", { class: "items" });
      const items = [];
      const add = () => {
        const n = items.length ? Number(items.at(-1).n) + 1 : 1;
        const field = schemaField(s.items, `${name} item ${n}`, `${path}.${n - 1}`, true, true);
        const item = { n, field };
        const li = el("li", null, field.node, el("button", {
          type: "button", class: "secondary", "aria-label": `Remove ${name} item ${n}`,
          onclick: () => { items.splice(items.indexOf(item), 1); li.remove(); },
        }, "Remove"));
        items.push(item);
        list.append(li);
      };
      for (let i = 0; i < Math.min(s.minItems ?? 0, 10); i += 1) add();
      const node = el("fieldset", null, el("legend", null, name, mark), hint, list,
        el("button", { type: "button", class: "secondary", onclick: add }, `Add ${name} item`));
      const read = () => {
        const value = items.map((i) => i.field.read()).filter((v) => v !== undefined);
        return !required && value.length === 0 ? undefined : value;
      };
      return { node, read };
    }

    if (kind === "boolean") {
      const byDefault = s.default === true;
      const input = el("input", { ...common, type: "checkbox", checked: byDefault });
      const node = el("div", { class: "field check" }, input, el("label", { for: id }, name, mark), hint, error);
      return { node, read: () => (required || input.checked !== byDefault ? input.checked : undefined) };
    }

    if (kind === "enum") {
      const input = el("select", common,
        el("option", { value: "" }, required ? "Choose…" : "(not set)"),
        s.enum.map((v, i) => el("option", { value: String(i) }, asText(v))));
      const at = s.enum.findIndex((v) => JSON.stringify(v) === JSON.stringify(s.default));
      if (at >= 0) input.value = String(at);
      return { node: wrap(input), read: () => (input.value === "" ? undefined : s.enum[Number(input.value)]) };
    }

    if (kind === "integer" || kind === "number") {
      const input = el("input", { ...common, type: "number", step: kind === "integer" ? "1" : "any", min: s.minimum, max: s.maximum,
        placeholder: s.default !== undefined ? `default: ${s.default}` : null });
      const read = () => {
        fieldError(input, error);
        if (input.value.trim() === "") {
          if (input.validity.badInput) fieldError(input, error, "Not a number.");
          return undefined;
        }
        const n = Number(input.value);
        if (!Number.isFinite(n)) fieldError(input, error, "Not a number.");
        if (kind === "integer" && !Number.isInteger(n)) fieldError(input, error, "Must be a whole number.");
        return n;
      };
      return { node: wrap(input), read };
    }

    if (kind === "string") {
      const long = (s.maxLength ?? Infinity) > 200 &&
        (/^(sql|query|code|script|text|body|content|markdown|source|template|statement|prompt)$/i.test(name) || s.format === "textarea");
      const attrs = { ...common, placeholder: s.default !== undefined ? `default: ${s.default}` : null };
      const input = long ? el("textarea", { ...attrs, rows: 5 }) : el("input", { ...attrs, type: "text" });
      return { node: wrap(input), read: () => (input.value === "" && !required ? undefined : input.value) };
    }

    // Anything else: a JSON textarea.
    const input = el("textarea", { ...common, rows: 4, class: "json", placeholder: "JSON" });
    const read = () => {
      fieldError(input, error);
      if (input.value.trim() === "") return undefined;
      try {
        return JSON.parse(input.value);
      } catch (e) {
        return fieldError(input, error, `Not valid JSON: ${e.message}`);
      }
    };
    return { node: wrap(input, `${name} (JSON)`), read };
  }

  async function renderCall(page) {
    const tools = (await allTools()).sort((a, b) => a.name.localeCompare(b.name));
    const pick = el("select", { id: "call-tool" },
      el("option", { value: "" }, "Choose a tool…"),
      tools.map((t) => el("option", { value: t.name }, t.name)));
    const body = el("div");
    page.section.append(el("div", { class: "toolbar" }, el("label", { for: "call-tool" }, "Tool"), pick), body);

    let generation = 0;
    pick.addEventListener("change", () => {
      const mine = ++generation;
      body.replaceChildren();
      if (!pick.value) return;
      api(`/v1/tools/${encodeURIComponent(pick.value)}`).then((def) => {
        if (mine !== generation) return;
        replace(body, callView(def, page));
        page.clear();
      }, page.fail);
    });
  }

  /** The chosen tool: its description, the arguments form, and the answer once called. */
  function callView(def, page) {
    const schema = def.inputSchema ?? {};
    const formable = kindOf(schema) === "object";
    const fields = formable
      ? Object.entries(schema.properties).map(([key, sub]) => [key, schemaField(sub, key, key, (schema.required ?? []).includes(key))])
      : [];
    // No properties and nothing else said: the tool takes no arguments; anything else the form cannot express is raw JSON.
    const takesNothing = !formable && !schema.oneOf && !schema.anyOf && !schema.allOf && typeof schema.additionalProperties !== "object";
    const raw = el("input", { id: "call-raw", type: "checkbox", checked: !formable && !takesNothing });
    const json = el("textarea", { id: "call-json", name: "arguments", rows: 10, class: "json", "aria-describedby": "call-json-error", value: "{}" });
    const jsonError = el("span", { id: "call-json-error", class: "field-error", hidden: true });
    const fieldBox = el("div", { class: "fields" }, fields.length ? fields.map(([, f]) => f.node) : el("p", { class: "muted" }, "This tool takes no arguments."));
    const rawBox = el("div", { class: "field" }, el("label", { for: "call-json" }, "Arguments (JSON object)"), json, jsonError);
    const submit = el("button", { id: "call-submit", type: "submit" }, "Call");
    const result = el("div", { id: "call-result" });

    const fromForm = () => {
      const args = {};
      for (const [key, f] of fields) {
        const v = f.read();
        if (v !== undefined) args[key] = v;
      }
      return args;
    };
    const fromJson = () => {
      fieldError(json, jsonError);
      let args;
      try {
        args = JSON.parse(json.value || "{}");
      } catch (e) {
        fieldError(json, jsonError, `Not valid JSON: ${e.message}`);
      }
      if (!args || typeof args !== "object" || Array.isArray(args)) fieldError(json, jsonError, "The arguments must be a JSON object.");
      return args;
    };
    const showRaw = () => {
      if (raw.checked) {
        try {
          json.value = pretty(fromForm());
        } catch {
          // keep the last JSON; the form shows what is wrong
        }
      }
      fieldBox.hidden = raw.checked;
      rawBox.hidden = !raw.checked;
    };
    raw.addEventListener("change", showRaw);
    showRaw();

    const form = el("form", { id: "call-form", novalidate: true },
      el("div", { class: "field check" }, raw, el("label", { for: "call-raw" }, "Raw JSON")),
      fieldBox, rawBox, submit);
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      let args;
      try {
        args = raw.checked ? fromJson() : fromForm();
      } catch (error) {
        if (error instanceof InputError) return error.cause?.focus();
        throw error;
      }
      submit.disabled = true;
      result.replaceChildren(el("p", { role: "status", class: "muted" }, "Calling…"));
      try {
        const answer = await api(`/v1/tools/${encodeURIComponent(def.name)}/call`, { method: "POST", body: args, acceptCall: true });
        replace(result, callAnswer(answer));
        page.clear();
      } catch (error) {
        result.replaceChildren();
        page.fail(error);
      } finally {
        submit.disabled = false;
      }
    });

    return [
      el("h2", null, el("code", null, def.name)),
      el("p", { id: "call-description", class: "description" }, def.description ?? ""),
      form, result,
    ];
  }

  /** A call's answer: the text the model sees, the JSON value, and what else came back. */
  function callAnswer(answer) {
    return [
      el("h2", null, "Answer ", answer.is_error ? el("span", { class: "badge" }, "error") : el("span", { class: "badge ok" }, "ok"),
        answer.error_kind ? el("span", { class: "muted" }, ` ${answer.error_kind}`) : null),
      el("pre", { id: "call-answer", tabindex: "0", dataset: { error: String(!!answer.is_error) } }, answer.text ?? ""),
      "value" in answer ? [el("h3", null, "Value"), el("pre", { id: "call-value", tabindex: "0" }, pretty(answer.value))] : null,
      answer.upstream ? [el("h3", null, "From the upstream server"), el("pre", { tabindex: "0" }, pretty(answer.upstream))] : null,
    ];
  }

  // ---------- Live calls ----------

  function stopLive() {
    state.live?.close();
    state.live = null;
  }

  /** One call as a table row (`data-call-id`). */
  function callRow(c) {
    const when = new Date(c.time);
    return el("tr", { dataset: { callId: String(c.id), tool: c.tool } },
      td(el("time", { datetime: c.time, title: c.time }, Number.isNaN(when.getTime()) ? c.time : when.toLocaleString())),
      td(el("code", null, c.tool)), td(orDash(c.agent)),
      el("td", { class: c.outcome === "ok" ? "ok" : "error" }, c.outcome),
      td(ms(c.duration_ms), true), td(tokens(c.bytes_in), true), td(tokens(c.bytes_out), true),
      td(c.trace_id ? el("code", null, c.trace_id) : DASH),
      td(c.params === null || c.params === undefined ? DASH : el("details", null, el("summary", null, "params"), el("pre", null, pretty(c.params)))));
  }

  async function renderLive(page) {
    const input = (id, label) => [el("label", { for: id }, label), el("input", { id, type: "search" })];
    const [toolLabel, tool] = input("live-tool", "Tool");
    const [resourceLabel, resource] = input("live-resource", "Resource");
    const [agentLabel, agent] = input("live-agent", "Agent");
    const outcome = el("select", { id: "live-outcome" }, ["all", "ok", "error"].map((o) => el("option", { value: o }, o)));
    const status = el("p", { id: "live-status", role: "status", class: "muted" }, "connecting…");
    const calls = table("live-calls", "Calls, newest first",
      ["Time", "Tool", "Agent", "Outcome", "#Duration ms", "#Bytes in", "#Bytes out", "Trace id", "Params"]);
    const empty = el("p", { class: "muted" }, "No calls recorded yet.");
    const older = el("button", { id: "live-older", type: "button", class: "secondary", hidden: true, disabled: true }, "Older");
    const rows = new Map(); // call id → its row
    let nextBefore = null;
    let generation = 0;

    const filters = () => ({
      tool: tool.value.trim(), resource: resource.value.trim(), agent: agent.value.trim(),
      outcome: outcome.value === "all" ? "" : outcome.value,
    });
    const matches = (c) => {
      const f = filters();
      return (!f.tool || c.tool === f.tool) && (!f.resource || c.resource === f.resource) && (!f.agent || (c.agent ?? "default") === f.agent) &&
        (!f.outcome || (f.outcome === "ok") === (c.outcome === "ok"));
    };

    /** Add a call once, keeping the rows ordered by id, newest on top. */
    function add(c) {
      if (rows.has(c.id)) return;
      const tr = callRow(c);
      rows.set(c.id, tr);
      const first = calls.tbody.firstElementChild;
      const last = calls.tbody.lastElementChild;
      if (!first || Number(last.dataset.callId) > c.id) calls.tbody.append(tr);
      else if (Number(first.dataset.callId) < c.id) calls.tbody.prepend(tr);
      else calls.tbody.insertBefore(tr, [...calls.tbody.children].find((r) => Number(r.dataset.callId) < c.id) ?? null);
      empty.hidden = true;
    }

    async function load(before) {
      const mine = generation;
      const data = await api(`/ui/api/calls?${query({ limit: 50, before, ...filters() })}`);
      if (mine !== generation) return;
      data.calls.forEach(add);
      nextBefore = data.next_before ?? null;
      older.hidden = older.disabled = nextBefore === null;
      empty.hidden = rows.size > 0;
    }
    function reload() {
      generation += 1;
      rows.clear();
      calls.tbody.replaceChildren();
      load(null).then(page.clear, page.fail);
    }

    let typing = 0;
    for (const box of [tool, resource, agent]) {
      box.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(reload, 300); });
    }
    outcome.addEventListener("change", reload);
    older.addEventListener("click", () => load(nextBefore).catch(page.fail));

    // The stream first, so that no call falls between the list and the stream; rows are deduped by id.
    const source = new EventSource("/ui/api/calls/live");
    state.live = source;
    source.addEventListener("open", () => { status.textContent = "live"; });
    source.addEventListener("error", () => {
      if (source.readyState === EventSource.CLOSED) {
        status.textContent = "disconnected";
        api("/ui/api/me").catch(() => {}); // a session that ended goes to the sign-in page
      } else {
        status.textContent = "reconnecting…";
      }
    });
    source.addEventListener("call", (event) => {
      let c;
      try {
        c = JSON.parse(event.data);
      } catch {
        return;
      }
      if (matches(c)) add(c);
    });
    source.addEventListener("missed", reload); // this follower fell behind: read the list again

    page.section.append(
      el("div", { class: "toolbar" }, toolLabel, tool, resourceLabel, resource, agentLabel, agent,
        el("label", { for: "live-outcome" }, "Outcome"), outcome),
      status, calls.node, empty, older);
    await load(null);
  }

  // ---------- Health ----------

  async function renderHealth(page) {
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

  // ---------- Router and start ----------

  const PAGES = {
    catalog: ["Catalog", renderCatalog],
    footprint: ["Context footprint", renderFootprint],
    search: ["Search playground", renderSearch],
    call: ["Call playground", renderCall],
    live: ["Live calls", renderLive],
    health: ["Health", renderHealth],
  };

  function route() {
    stopLive();
    const wanted = location.hash.slice(1);
    const name = Object.hasOwn(PAGES, wanted) ? wanted : "catalog";
    const [title, render] = PAGES[name];
    for (const a of document.querySelectorAll("nav a")) {
      if (a.getAttribute("href") === `#${name}`) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    document.title = `${title} · Quiver`;
    const alert = el("p", { class: "alert", role: "alert", hidden: true });
    const section = el("section", { id: `page-${name}`, "aria-labelledby": `page-${name}-title` },
      el("h1", { id: `page-${name}-title` }, title), alert);
    const page = {
      section,
      fail: (error) => { alert.textContent = error?.message ?? String(error); alert.hidden = false; },
      clear: () => { alert.hidden = true; alert.textContent = ""; },
    };
    document.getElementById("view").replaceChildren(section);
    render(page).then(() => { section.dataset.ready = "true"; }, page.fail);
  }

  async function start() {
    const view = document.getElementById("view");
    try {
      state.me = await api("/ui/api/me");
    } catch (error) {
      view.replaceChildren(el("p", { class: "alert", role: "alert" }, error.message));
      return;
    }
    document.getElementById("version").textContent = `v${state.me.version}`;
    document.getElementById("principal").textContent = `${state.me.principal} · ${state.me.replica}`;
    const signOut = document.getElementById("sign-out");
    signOut.hidden = !state.me.token_mode;
    signOut.addEventListener("click", async () => {
      stopLive();
      try {
        await api("/ui/sign-out", { method: "POST" });
      } catch {
        // signed out or not: the sign-in page is where this ends
      }
      location.assign("/ui/sign-in");
    });
    window.addEventListener("hashchange", route);
    window.addEventListener("pagehide", stopLive);
    route();
  }

  start();
})();
