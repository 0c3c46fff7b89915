// What the pages share about the server: the session (`/ui/api/me`, its CSRF token), the JSON API, the tool list.

import { el } from "/ui/assets/dom.js";

/** The session: `me` is `/ui/api/me` (principal, agents, CSRF token, …), set at start. */
export const state = { me: null };

/** A labelled select of the configured agents. */
export function agentSelect(id) {
  const agents = state.me.agents?.length ? state.me.agents : [state.me.agent ?? "default"];
  const select = el("select", { id, value: state.me.agent ?? agents[0] }, agents.map((a) => el("option", { value: a }, a)));
  return [el("label", { for: id }, "Agent"), select];
}

/** A query string of the parameters that are set. */
export const query = (params) =>
  new URLSearchParams(Object.entries(params).filter(([, v]) => v !== "" && v !== null && v !== undefined)).toString();

/**
 * Fetch JSON from the host with the session cookie. Non-GET requests carry the CSRF header.
 * A 401 goes to the sign-in page; other failures throw an Error with the server's message.
 * `acceptCall`: a 4xx/5xx whose body is a call answer (`is_error`) is returned, not thrown.
 */
export async function api(path, { method = "GET", body, acceptCall = false } = {}) {
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
export async function allTools() {
  const tools = [];
  let cursor = null;
  do {
    const page = await api(`/v1/tools/summary?${query({ limit: 500, cursor })}`);
    tools.push(...page.tools);
    cursor = page.next_cursor ?? null;
  } while (cursor);
  return tools;
}
