// memvm's browser view. Everything stored is shown as text (textContent), never as markup: stored
// content is data. The view polls /api/version and redraws what is open when memory changes.
"use strict";

const state = { view: "memory", session: "", before: null, page: null, version: "", pages: [] };
const $ = (id) => document.getElementById(id);

function say(text) { $("status").textContent = text; }

// The token comes in the URL's fragment, which never reaches a server; it is kept for this tab
// only and taken out of the address bar at once.
function takeToken() {
  const found = new URLSearchParams(location.hash.slice(1)).get("token");
  if (found) {
    sessionStorage.setItem("memvm-token", found);
    history.replaceState(null, "", location.pathname);
  }
  return sessionStorage.getItem("memvm-token") || "";
}
const token = takeToken();

async function api(path, options = {}) {
  let response;
  try {
    response = await fetch(path, { ...options, headers: { ...(options.headers || {}), authorization: `Bearer ${token}` } });
  } catch {
    throw new Error("The view's server does not answer: is memvm ui still running?");
  }
  if (response.status === 401) throw new Error("Not allowed: open the URL memvm ui printed (it carries the token).");
  const body = await response.json().catch(() => ({ error: "The view could not read the answer." }));
  if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
  return body;
}

async function exportNamespace(event) {
  event.preventDefault();
  try {
    const response = await fetch("api/export", { headers: { authorization: `Bearer ${token}` } });
    if (!response.ok) throw new Error("The export failed: open the URL memvm ui printed again.");
    const link = document.createElement("a");
    link.href = URL.createObjectURL(await response.blob());
    link.download = `memvm-${$("namespace").dataset.name || "export"}.jsonl`;
    link.click();
    URL.revokeObjectURL(link.href);
    say("Exported.");
  } catch (error) { say(error.message); }
}

function post(path, body) {
  return api(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
}

function when(seconds) {
  if (seconds === null || seconds === undefined) return "";
  return new Date(seconds * 1000).toISOString().replace("T", " ").slice(0, 19);
}

function cell(row, text) {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined ? "" : String(text);
  row.appendChild(td);
  return td;
}

function fillTable(id, rows, columns) {
  const body = $(id).querySelector("tbody");
  body.replaceChildren();
  for (const item of rows) {
    const row = document.createElement("tr");
    for (const column of columns) cell(row, column(item));
    body.appendChild(row);
  }
  if (!rows.length) {
    const row = document.createElement("tr");
    const td = cell(row, "Nothing yet.");
    td.colSpan = columns.length;
    body.appendChild(row);
  }
}

function show(view) {
  state.view = view;
  for (const tab of document.querySelectorAll(".tab")) tab.setAttribute("aria-pressed", String(tab.dataset.view === view));
  for (const name of ["memory", "context", "tools"]) $(`view-${name}`).hidden = name !== view;
  refresh();
}

async function loadOverview() {
  const overview = await api("api/overview");
  $("namespace").textContent = `namespace ${overview.namespace}: ${overview.pages} pages`;
  $("namespace").dataset.name = overview.namespace;
  const list = $("sessions");
  list.replaceChildren();
  const all = document.createElement("li");
  const allButton = document.createElement("button");
  allButton.type = "button";
  allButton.textContent = "All sessions";
  allButton.setAttribute("aria-pressed", String(state.session === ""));
  allButton.addEventListener("click", () => pickSession(""));
  all.appendChild(allButton);
  list.appendChild(all);
  for (const session of overview.sessions) {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = `${session.session} (${session.pages} pages, turn ${session.turn})`;
    button.setAttribute("aria-pressed", String(state.session === session.session));
    button.addEventListener("click", () => pickSession(session.session));
    item.appendChild(button);
    list.appendChild(item);
  }
  for (const id of ["context-session", "tools-session"]) {
    const select = $(id);
    const chosen = select.value;
    select.replaceChildren();
    for (const session of overview.sessions) {
      const option = document.createElement("option");
      option.value = option.textContent = session.session;
      select.appendChild(option);
    }
    if (chosen) select.value = chosen;
  }
}

function pickSession(session) {
  state.session = session;
  $("filter-session").textContent = session ? `session ${session}` : "";
  loadOverview().catch((error) => say(error.message));
  loadPages(false);
}

function pageQuery() {
  const query = new URLSearchParams();
  if (state.session) query.set("session", state.session);
  if ($("filter-type").value) query.set("type", $("filter-type").value);
  if ($("filter-pinned").checked) query.set("pinned", "1");
  if (state.before !== null) query.set("before", state.before);
  return query;
}

async function loadPages(append, keep = false) {
  if (!append) state.before = null;
  // A redraw for another writer's change keeps as many rows as were shown (up to 200).
  const limit = append ? 50 : keep ? Math.min(200, Math.max(50, state.pages.length)) : 50;
  try {
    const query = pageQuery();
    query.set("limit", limit);
    const found = await api(`api/pages?${query}`);
    state.pages = append ? state.pages.concat(found.pages) : found.pages;
    drawPages(state.pages, found.pages.length === limit);
  } catch (error) { say(error.message); }
}

function drawPages(pages, more) {
  const body = $("pages").querySelector("tbody");
  body.replaceChildren();
  for (const page of pages) {
    const row = document.createElement("tr");
    const first = document.createElement("td");
    const open = document.createElement("button");
    open.type = "button";
    open.className = "link";
    open.textContent = page.page_id;
    open.addEventListener("click", () => openPage(page.page_id));
    first.appendChild(open);
    row.appendChild(first);
    cell(row, page.role ? `${page.type}/${page.role}` : page.type);
    cell(row, page.session);
    cell(row, when(page.created_at));
    cell(row, when(page.last_access));
    cell(row, page.access_count);
    cell(row, page.pinned ? "pinned" : "");
    cell(row, `${page.tokens.full} / ${page.tokens.reduced} / ${page.tokens.abstract} / ${page.tokens.reference}`);
    cell(row, page.abstract);
    body.appendChild(row);
  }
  if (!pages.length) {
    const row = document.createElement("tr");
    const td = cell(row, "No pages.");
    td.colSpan = 9;
    body.appendChild(row);
  }
  state.before = pages.length ? pages[pages.length - 1].cursor : null;
  $("more").hidden = !more;
}

async function search(text) {
  if (!text.trim()) { loadPages(false); return; }
  try {
    const found = await api(`api/search?q=${encodeURIComponent(text)}`);
    drawPages(found.results.map((hit) => ({
      page_id: hit.page_id, type: hit.type, role: hit.role, session: hit.session, created_at: hit.created_at,
      last_access: null, access_count: "", pinned: false, abstract: hit.snippet,
      tokens: { full: "", reduced: "", abstract: "", reference: "" }, cursor: null,
    })), false);
    say(`${found.results.length} pages match, best first.`);
  } catch (error) { say(error.message); }
}

async function openPage(pageId, quietly = false) {
  try {
    const page = await api(`api/pages/${encodeURIComponent(pageId)}`);
    state.page = page;
    $("page-detail").hidden = false;
    $("detail-title").textContent = page.page_id;
    $("detail-meta").textContent =
      `${page.type}${page.role ? "/" + page.role : ""} · session ${page.session} · from ${page.provenance} · ` +
      `created ${when(page.created_at)} · last access ${when(page.last_access)} · ${page.access_count} accesses · ` +
      `importance ${page.importance}`;
    $("pin").textContent = page.pinned ? "Unpin" : "Pin";
    $("edit").hidden = !page.editable;
    $("edit-form").hidden = true;
    const levels = $("levels");
    levels.replaceChildren();
    for (const [name, text] of Object.entries(page.levels)) {
      const box = document.createElement("section");
      const title = document.createElement("h4");
      title.textContent = `${name} (${page.tokens[name]} tokens)`;
      const body = document.createElement("pre");
      body.tabIndex = 0;
      body.textContent = text;
      box.append(title, body);
      levels.appendChild(box);
    }
    if (!quietly) $("detail-title").focus();
  } catch (error) {
    say(error.message);
    if (quietly) $("page-detail").hidden = true;
  }
}

async function loadContext() {
  const session = $("context-session").value;
  if (!session) { say("No session yet."); return; }
  try {
    const context = await api(`api/sessions/${encodeURIComponent(session)}/context`);
    drawBudget(context);
    $("working-set").textContent = context.context;
    $("manifest").textContent = pretty(context.manifest);
    const log = await api(`api/sessions/${encodeURIComponent(session)}/mutations`);
    fillTable("mutations", log.mutations, [
      (m) => when(m.at), (m) => m.turn, (m) => m.kind, (m) => m.page_id,
      (m) => `${m.level_before ?? "-"} → ${m.level_after ?? "-"}`, (m) => m.actor, (m) => m.cause,
    ]);
  } catch (error) { say(error.message); }
}

const LEVELS = ["full", "reduced", "abstract", "reference"];

function pretty(text) {
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch { return text; }
}

function drawBudget(context) {
  const parts = [["reserve", context.reserved_tokens]];
  LEVELS.forEach((name, level) => parts.push([`pages at ${name}`, context.tokens_by_level[String(level)] || 0]));
  parts.push(["free", context.free_tokens]);
  const bar = $("budget");
  bar.replaceChildren();
  const legend = $("budget-legend");
  legend.replaceChildren();
  const total = Math.max(1, context.budget_tokens);
  parts.forEach(([name, tokens], index) => {
    const piece = document.createElement("span");
    piece.className = `part part-${index}`;
    piece.style.width = `${(100 * tokens) / total}%`;
    piece.title = `${name}: ${tokens} tokens`;
    bar.appendChild(piece);
    const item = document.createElement("li");
    const swatch = document.createElement("span");
    swatch.className = `swatch part-${index}`;
    item.append(swatch, document.createTextNode(`${name}: ${tokens} tokens`));
    legend.appendChild(item);
  });
  bar.setAttribute("aria-label", `Token budget of ${context.budget_tokens}: ` + parts.map(([n, t]) => `${n} ${t}`).join(", "));
}

async function loadTools() {
  try {
    const session = $("tools-session").value;
    if (session) {
      const found = await api(`api/sessions/${encodeURIComponent(session)}/bindings`);
      fillTable("bindings", found.bindings, [(b) => b.ref, (b) => b.tool, (b) => b.args, (b) => b.value, (b) => b.turn]);
      const judged = await api(`api/sessions/${encodeURIComponent(session)}/verdicts`);
      fillTable("verdicts", judged.verdicts, [
        (v) => when(v.at), (v) => v.turn, (v) => v.tool, (v) => v.verdict,
        (v) => v.reasons.map((r) => `${r.rule} (${r.severity}): ${r.message}`).join(" "),
      ]);
    }
    const tools = await api("api/tools");
    fillTable("tools", tools.tools, [
      (t) => t.tool, (t) => t.calls, (t) => `${t.successes} (${Math.round((100 * t.successes) / Math.max(1, t.calls))}%)`,
      (t) => (t.mean_ms === null ? "" : `${Math.round(t.mean_ms)} ms`), (t) => when(t.last_at),
    ]);
    $("knowledge").textContent = JSON.stringify(tools.knowledge, null, 2);
  } catch (error) { say(error.message); }
}

function refresh(keep = false) {
  loadOverview().catch((error) => say(error.message));
  if (state.view === "memory") { if (!$("search").value.trim()) loadPages(false, keep); }
  else if (state.view === "context") loadContext();
  else loadTools();
}

async function poll() {
  try {
    const { version } = await api("api/version");
    if (version !== state.version) {
      refresh(true);
      // The open page is redrawn unless its note is being edited; focus stays where it is.
      if (state.page && !$("page-detail").hidden && $("edit-form").hidden) openPage(state.page.page_id, true);
    }
    state.version = version;
  } catch (error) { say(error.message); }
}

function wire() {
  for (const tab of document.querySelectorAll(".tab")) tab.addEventListener("click", () => show(tab.dataset.view));
  $("export").addEventListener("click", exportNamespace);
  $("search-form").addEventListener("submit", (event) => { event.preventDefault(); search($("search").value); });
  $("filter-type").addEventListener("change", () => loadPages(false));
  $("filter-pinned").addEventListener("change", () => loadPages(false));
  $("more").addEventListener("click", () => loadPages(true));
  $("close-detail").addEventListener("click", () => { $("page-detail").hidden = true; state.page = null; });
  $("pin").addEventListener("click", async () => {
    try {
      await post(`api/pages/${encodeURIComponent(state.page.page_id)}/pin`, { pinned: !state.page.pinned });
      say(state.page.pinned ? "Unpinned." : "Pinned.");
      await openPage(state.page.page_id);
      loadPages(false);
    } catch (error) { say(error.message); }
  });
  $("forget").addEventListener("click", () => { $("confirm-forget").showModal(); $("confirm-no").focus(); });
  $("confirm-no").addEventListener("click", () => $("confirm-forget").close());
  $("confirm-yes").addEventListener("click", async () => {
    $("confirm-forget").close();
    try {
      await post(`api/pages/${encodeURIComponent(state.page.page_id)}/forget`, { confirm: true });
      say(`Forgot ${state.page.page_id}.`);
      $("page-detail").hidden = true;
      state.page = null;
      refresh();
      $("search").focus();
    } catch (error) { say(error.message); }
  });
  $("edit").addEventListener("click", () => {
    $("edit-form").hidden = false;
    $("edit-text").value = state.page.levels.full;
    $("edit-text").focus();
  });
  $("edit-cancel").addEventListener("click", () => { $("edit-form").hidden = true; });
  $("edit-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await post(`api/pages/${encodeURIComponent(state.page.page_id)}/edit`, { content: $("edit-text").value });
      say("Note saved.");
      await openPage(state.page.page_id);
      loadPages(false);
    } catch (error) { say(error.message); }
  });
  $("context-session").addEventListener("change", loadContext);
  $("tools-session").addEventListener("change", loadTools);
  $("detail-title").tabIndex = -1;
}

async function start() {
  wire();
  // The version before the first drawing: any write after it shows up at the next poll.
  try { state.version = (await api("api/version")).version; } catch (error) { say(error.message); }
  refresh();
  setInterval(poll, 2000);
}

start();
