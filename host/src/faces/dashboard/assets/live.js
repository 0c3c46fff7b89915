// The live calls page: the recorded calls, newest first, followed over server-sent events.

import { DASH, el, ms, orDash, pretty, table, td, tokens } from "/ui/assets/dom.js";
import { api, query } from "/ui/assets/api.js";

let stream = null; // the open event stream, if any

export function stopLive() {
  stream?.close();
  stream = null;
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

export async function renderLive(page) {
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
  stream = source;
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
