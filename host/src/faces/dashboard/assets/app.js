// Quiver operator dashboard: one hash-routed page built with DOM calls only.
// Every text from the server goes in as a text node or an input's value, never as HTML.
// This module is the router: the pages are one module each.

import { el } from "/ui/assets/dom.js";
import { api, state } from "/ui/assets/api.js";
import { renderCatalog } from "/ui/assets/catalog.js";
import { renderFootprint } from "/ui/assets/footprint.js";
import { renderSearch } from "/ui/assets/search.js";
import { renderCall } from "/ui/assets/call.js";
import { renderLive, stopLive } from "/ui/assets/live.js";
import { renderHealth } from "/ui/assets/health.js";

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
