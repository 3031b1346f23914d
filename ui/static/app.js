// memvm's browser view. Everything stored is shown as text (textContent), never as markup: stored
// content is data. The view polls /api/version and redraws what is open when memory changes.
"use strict";

const state = { view: "home", session: "", page: null, version: "", forgetting: null, viewer: "" };
// Each list shown, by name: the rows in hand, where the next screen starts, and what was asked.
const lists = {};
const $ = (id) => document.getElementById(id);

function say(text) { $("status").textContent = text; }
function count(n, one, many = `${one}s`) { return `${n} ${n === 1 ? one : many}`; }

// Characters that reorder or hide text are shown by their code point: a stored "\u202e4321" must
// not display as "1234", nor tag characters carry words nobody sees. Bidirectional controls,
// zero-width and invisible formatting characters, line and paragraph separators, variation
// selectors, fillers and the tag block.
const HIDDEN = /[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\u{e0000}-\u{e007f}\u{e0100}-\u{e01ef}]/gu;
function shown(text) {
  return String(text).replace(HIDDEN, (c) => `⟨U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}⟩`);
}

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
    throw new Error("The view's server does not answer: is it still running?");
  }
  if (response.status === 401) throw new Error("Not allowed: open the view's address with its token (…/#token=…) again.");
  const body = await response.json().catch(() => ({ error: "The view could not read the answer." }));
  if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
  return body;
}

async function exportNamespace(event) {
  event.preventDefault();
  try {
    const response = await fetch("api/export", { headers: { authorization: `Bearer ${token}` } });
    if (response.status === 401) throw new Error("The export failed: open the URL memvm ui printed again.");
    // Refused in one sentence (another export running, one too large for the view...).
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      throw new Error(body.error || `The export failed (HTTP ${response.status}).`);
    }
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

// One more screen of a list (append), or its first screens again: as many rows as were shown when
// the same list is redrawn (keep), else one screen. Every list is paged by the server's cursor.
async function loadList(name, path, key, { append = false, keep = false, query = new URLSearchParams() } = {}) {
  const asked = `${path}?${query}`;
  const held = lists[name] && lists[name].asked === asked ? lists[name] : { rows: [], next: null };
  const wanted = keep ? held.rows.length : 1;
  let rows = append ? held.rows : [];
  let next = append ? held.next : null;
  let body;
  do {
    const screen = new URLSearchParams(query);
    if (next) screen.set("before", next);
    body = await api(`${path}?${screen}`);
    rows = rows.concat(body[key]);
    next = body.next;
  } while (next && rows.length < wanted);
  lists[name] = { rows, next, asked };
  const button = $(`more-${name}`);
  if (button) button.hidden = !next;
  return body;
}

function moreButton(name, draw) {
  const button = $(`more-${name}`);
  button.addEventListener("click", async () => {
    try {
      await draw(true);
      // At the end of the list the button goes; focus moves to the list rather than being lost.
      if (button.hidden) focusList(name);
    } catch (error) { say(error.message); }
  });
}

function focusList(name) {
  const list = $(name);
  list.tabIndex = -1;
  list.focus();
}

// Local time, as the person reading it lives it.
function when(seconds) {
  if (seconds === null || seconds === undefined) return "";
  const d = new Date(seconds * 1000);
  const two = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

function cell(row, text) {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined ? "" : shown(text);
  row.appendChild(td);
  return td;
}

// Each cell carries its column's name, which a narrow screen shows beside the value when a table's
// rows are stacked as cards; the roles keep the table a table to a screen reader once restyled.
function labelCells(table) {
  const names = [...table.querySelectorAll("thead th")].map((th) => th.textContent);
  table.setAttribute("role", "table");
  for (const row of table.querySelectorAll("tr")) {
    row.setAttribute("role", "row");
    [...row.children].forEach((item, index) => {
      item.setAttribute("role", item.tagName === "TH" ? "columnheader" : "cell");
      if (item.tagName === "TD" && item.colSpan === 1) item.dataset.label = names[index] || "";
    });
  }
}

// A redraw replaces elements; the one that had focus is found again by its key and refocused.
function keepingFocus(redraw) {
  const key = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.key : undefined;
  redraw();
  if (key) {
    const again = [...document.querySelectorAll("[data-key]")].find((element) => element.dataset.key === key);
    if (again) again.focus();
  }
}

// Fields in one line, joined by " · ", each isolated so that one holding direction marks cannot
// reorder the others; empty ones are left out.
function fillFields(element, fields) {
  element.replaceChildren();
  fields.filter(Boolean).forEach((field, index) => {
    if (index) element.append(" · ");
    const part = document.createElement("bdi");
    part.textContent = shown(field);
    element.appendChild(part);
  });
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
  labelCells($(id));
}

function show(view) {
  state.view = view;
  say("");
  for (const tab of document.querySelectorAll(".tab")) tab.setAttribute("aria-pressed", String(tab.dataset.view === view));
  for (const name of ["home", "memory", "context", "tools"]) $(`view-${name}`).hidden = name !== view;
  refresh(true);
}

async function loadOverview(append = false, keep = false) {
  const overview = await loadList("sessions", "api/overview", "sessions", { append, keep });
  $("namespace").textContent = `namespace ${overview.namespace}: ${count(overview.pages, "page")}`;
  $("namespace").dataset.name = overview.namespace;
  // Opened read-only: the curating buttons are not offered.
  document.body.classList.toggle("read-only", overview.read_only);
  state.viewer = overview.viewer;
  const sessions = lists.sessions.rows;
  keepingFocus(() => drawSessions(sessions, overview.viewer));
}

function drawSessions(sessions, viewer) {
  const list = $("sessions");
  list.replaceChildren();
  const all = document.createElement("li");
  const allButton = document.createElement("button");
  allButton.type = "button";
  allButton.textContent = "All sessions";
  allButton.dataset.key = "session:";
  allButton.setAttribute("aria-pressed", String(state.session === ""));
  allButton.addEventListener("click", () => pickSession(""));
  all.appendChild(allButton);
  list.appendChild(all);
  for (const session of sessions) {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    const whose = session.session === viewer ? ", this view's changes" : "";
    button.textContent = `${shown(session.session)} (${count(session.pages, "page")}, turn ${session.turn}${whose})`;
    button.dataset.key = `session:${session.session}`;
    button.setAttribute("aria-pressed", String(state.session === session.session));
    button.addEventListener("click", () => pickSession(session.session));
    item.appendChild(button);
    list.appendChild(item);
  }
  for (const id of ["context-session", "tools-session"]) {
    const select = $(id);
    const chosen = select.value;
    select.replaceChildren();
    for (const session of sessions) {
      const option = document.createElement("option");
      option.value = session.session;
      option.textContent = shown(session.session);
      select.appendChild(option);
    }
    // The sessions not loaded yet are one choice away, not cut off.
    if (lists.sessions.next) {
      const more = document.createElement("option");
      more.value = MORE_SESSIONS;
      more.textContent = "More sessions…";
      select.appendChild(more);
    }
    if (chosen && chosen !== MORE_SESSIONS) select.value = chosen;
    // Opened on the most recent session that has anything, never on this view's own.
    else select.value = (sessions.find((s) => s.session !== viewer && (s.pages > 0 || s.turn > 0)) || sessions[0] || {}).session || "";
  }
}

const MORE_SESSIONS = "\u0000more";

// A session select's "More sessions…": the next screen of sessions, then the first of them.
async function moreSessions(select) {
  const shownBefore = lists.sessions.rows.length;
  await loadOverview(true);
  const first = lists.sessions.rows[shownBefore];
  if (first) select.value = first.session;
}

// The filters changed: the search is run again within them, or the list redrawn.
function refine(keep = false) {
  if ($("search").value.trim()) search($("search").value, keep);
  else loadPages(false, keep);
}

function pickSession(session) {
  state.session = session;
  $("filter-session").textContent = session ? `session ${shown(session)}` : "";
  // The session picked here is the one the other views open on.
  if (session) for (const id of ["context-session", "tools-session"]) $(id).value = session;
  loadOverview(false, true).catch((error) => say(error.message));
  refine();
}

function pageQuery() {
  const query = new URLSearchParams();
  if (state.session) query.set("session", state.session);
  if ($("filter-type").value) query.set("type", $("filter-type").value);
  if ($("filter-pinned").checked) query.set("pinned", "1");
  query.set("limit", "50");
  return query;
}

async function loadPages(append, keep = false) {
  try {
    await loadList("pages", "api/pages", "pages", { append, keep, query: pageQuery() });
    keepingFocus(() => drawPages(lists.pages.rows));
  } catch (error) { say(error.message); }
}

function drawPages(pages) {
  const body = $("pages").querySelector("tbody");
  body.replaceChildren();
  for (const page of pages) {
    const row = document.createElement("tr");
    const first = document.createElement("td");
    const open = document.createElement("button");
    open.type = "button";
    open.className = "link";
    open.textContent = shown(page.page_id);
    open.dataset.key = `page:${page.page_id}`;
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
  labelCells($("pages"));
}

// Search keeps to the filters set beside it (session, type, pinned), ranked as search_pages ranks.
async function search(text, keep = false) {
  if (!text.trim()) { say(""); loadPages(false, keep); return; }
  try {
    const query = pageQuery();
    query.delete("limit");
    query.set("q", text);
    const found = await api(`api/search?${query}`);
    // The results may arrive after a key press moved focus into the list: it stays on its page.
    keepingFocus(() => drawPages(found.results.map((hit) => ({
      page_id: hit.page_id, type: hit.type, role: hit.role, session: hit.session, created_at: hit.created_at,
      last_access: null, access_count: "", pinned: hit.pinned, abstract: hit.snippet,
      tokens: { full: hit.tokens["0"], reduced: hit.tokens["1"], abstract: hit.tokens["2"], reference: hit.tokens["3"] },
    }))));
    $("more-pages").hidden = true;
    const matched = found.results.length;
    say(matched >= found.limit
      ? `The ${matched} best matches, best first; add words to narrow the search.`
      : matched === 0 ? "No page matches." : matched === 1 ? "1 page matches." : `${matched} pages match, best first.`);
  } catch (error) { say(error.message); }
}

// Opens a page's detail; `quietly` (a redraw) leaves focus and an open edit where they are.
async function openPage(pageId, quietly = false) {
  // A redraw that comes back after its page was closed, or forgotten here, shows nothing: the
  // status says what was done meanwhile ("Forgot …"), not that the page is gone.
  const overtaken = () => quietly && state.page?.page_id !== pageId;
  try {
    const page = await api(`api/pages/${encodeURIComponent(pageId)}`);
    if (overtaken()) return;
    state.page = page;
    $("page-detail").hidden = false;
    $("detail-title").textContent = shown(page.page_id);
    const meta = $("detail-meta");
    const fields = [
      `${page.type}${page.role ? "/" + page.role : ""}`, `session ${page.session}`, `from ${page.provenance}`,
      `created ${when(page.created_at)}`, `last access ${when(page.last_access)}`,
      count(page.access_count, "access", "accesses"), `importance ${page.importance}`, page.pinned ? "pinned" : "not pinned",
      `version ${page.version}`,
    ];
    if (page.expires_at !== null) fields.push(`expires ${when(page.expires_at)}`);
    fillFields(meta, fields);
    $("pin").textContent = page.pinned ? "Unpin" : "Pin";
    $("edit").hidden = !page.editable;
    if (!quietly) $("edit-form").hidden = true;
    keepingFocus(() => {
      const levels = $("levels");
      levels.replaceChildren();
      for (const [name, text] of Object.entries(page.levels)) {
        const box = document.createElement("section");
        const title = document.createElement("h4");
        title.textContent = `${name} (${page.tokens[name]} tokens)`;
        const body = document.createElement("pre");
        body.tabIndex = 0;
        body.dataset.key = `level:${name}`;
        body.textContent = shown(text);
        box.append(title, body);
        levels.appendChild(box);
      }
      // What a rewrite replaced, newest first: history, never what search or context shows.
      for (const version of [...page.versions].reverse()) {
        const box = document.createElement("section");
        box.className = "superseded";
        const title = document.createElement("h4");
        title.textContent = `version ${version.version}, written ${when(version.written_at)}, replaced ${when(version.superseded_at)}`;
        const body = document.createElement("pre");
        body.tabIndex = 0;
        body.dataset.key = `version:${version.version}`;
        body.textContent = shown(version.content);
        box.append(title, body);
        levels.appendChild(box);
      }
    });
    if (!quietly) $("detail-title").focus();
  } catch (error) {
    if (overtaken()) return;
    say(error.message);
    if (quietly) $("page-detail").hidden = true;
  }
}

function sessionPath(id, what) {
  return `api/sessions/${encodeURIComponent($(id).value)}/${what}`;
}

async function loadContext(keep = false) {
  const session = $("context-session").value;
  if (!session) { say("No session yet."); return; }
  try {
    const context = await api(sessionPath("context-session", "context"));
    drawBudget(context);
    $("working-set").textContent = shown(context.context);
    $("manifest").textContent = shown(pretty(context.manifest));
    await loadMutations(false, keep);
  } catch (error) { say(error.message); }
}

async function loadMutations(append, keep = false) {
  await loadList("mutations", sessionPath("context-session", "mutations"), "mutations", { append, keep });
  fillTable("mutations", lists.mutations.rows, [
    (m) => when(m.at), (m) => m.turn, (m) => m.kind, (m) => m.page_id,
    (m) => `${m.level_before ?? "-"} → ${m.level_after ?? "-"}`, (m) => m.actor, (m) => m.cause,
  ]);
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

async function loadBindings(append, keep = false) {
  await loadList("bindings", sessionPath("tools-session", "bindings"), "bindings", { append, keep });
  fillTable("bindings", lists.bindings.rows, [(b) => b.ref, (b) => b.tool, (b) => b.args, (b) => b.value, (b) => b.turn]);
}

async function loadVerdicts(append, keep = false) {
  await loadList("verdicts", sessionPath("tools-session", "verdicts"), "verdicts", { append, keep });
  fillTable("verdicts", lists.verdicts.rows, [
    (v) => when(v.at), (v) => v.turn, (v) => v.tool, (v) => v.verdict,
    (v) => v.reasons.map((r) => `${r.rule} (${r.severity}): ${r.message}`).join(" "),
  ]);
}

async function loadToolStats(append, keep = false) {
  const tools = await loadList("tools", "api/tools", "tools", { append, keep });
  fillTable("tools", lists.tools.rows, [
    (t) => t.tool, (t) => t.calls, (t) => `${t.successes} (${Math.round((100 * t.successes) / Math.max(1, t.calls))}%)`,
    (t) => (t.mean_ms === null ? "" : `${Math.round(t.mean_ms)} ms`), (t) => when(t.last_at),
  ]);
  const known = tools.knowledge.tools;
  fillTable("errors", known.flatMap((t) => t.common_errors.map((e) => ({ tool: t.tool, ...e }))), [
    (e) => e.tool, (e) => e.error_type, (e) => e.count, (e) => e.example,
    (e) => e.typical_fix_text || "", (e) => (e.fix_count > 1 ? `${e.fix_count} times` : e.fix_count ? "once" : "not yet"),
  ]);
  fillTable("successes", known.flatMap((t) => t.success_hints.map((h) => ({ tool: t.tool, ...h }))), [
    (h) => h.tool, (h) => h.arg, (h) => JSON.stringify(h.value), (h) => h.count, (h) => h.goal || "",
  ]);
}

async function loadTools(keep = false, keepTools = keep) {
  try {
    if ($("tools-session").value) {
      await loadBindings(false, keep);
      await loadVerdicts(false, keep);
    }
    await loadToolStats(false, keepTools);
  } catch (error) { say(error.message); }
}

function refresh(keep = false) {
  const overview = loadOverview(false, true).catch((error) => say(error.message));
  if (state.view === "home") { loadHome(keep); return; }
  if (state.view === "memory") { if (!$("search").value.trim()) loadPages(false, keep); return; }
  // The context and tools views show the session their select names, which the overview fills:
  // opened before it has arrived, they would find no session and stay empty.
  const view = state.view;
  overview.then(() => {
    if (state.view !== view) return;
    if (view === "context") loadContext(keep);
    else loadTools(keep);
  });
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
  $("filter-type").addEventListener("change", () => refine());
  $("filter-pinned").addEventListener("change", () => refine());
  $("more-pages").addEventListener("click", async () => {
    await loadPages(true);
    if ($("more-pages").hidden) focusList("pages");
  });
  moreButton("sessions", (append) => loadOverview(append));
  moreButton("mutations", loadMutations);
  moreButton("bindings", loadBindings);
  moreButton("verdicts", loadVerdicts);
  moreButton("tools", loadToolStats);
  $("close-detail").addEventListener("click", () => {
    const opener = state.page && document.querySelector(`[data-key="${CSS.escape(`page:${state.page.page_id}`)}"]`);
    $("page-detail").hidden = true;
    state.page = null;
    if (opener) opener.focus();
  });
  $("pin").addEventListener("click", async () => {
    try {
      await post(`api/pages/${encodeURIComponent(state.page.page_id)}/pin`, { pinned: !state.page.pinned });
      say(state.page.pinned ? "Unpinned." : "Pinned: listed first in every session's manifest, never evicted.");
      await openPage(state.page.page_id, true);
      $("pin").focus();
      refine(true);
    } catch (error) { say(error.message); }
  });
  $("forget").addEventListener("click", () => {
    state.forgetting = null; // All pages' open page, not the reader's
    $("confirm-forget").showModal();
    $("confirm-no").focus();
  });
  $("confirm-no").addEventListener("click", () => { state.forgetting = null; $("confirm-forget").close(); });
  $("confirm-yes").addEventListener("click", async () => {
    $("confirm-forget").close();
    if (state.forgetting) {
      try { await forgetFromReader(); } catch (error) { say(error.message); }
      return;
    }
    try {
      await post(`api/pages/${encodeURIComponent(state.page.page_id)}/forget`, { confirm: true });
      say(`Forgot ${state.page.page_id}.`);
      $("page-detail").hidden = true;
      state.page = null;
      refresh(true);
      $("search").focus();
    } catch (error) { say(error.message); }
  });
  $("edit").addEventListener("click", () => {
    $("edit-form").hidden = false;
    $("edit-error").textContent = "";
    $("edit-text").value = state.page.levels.full;
    // A text box cannot show them as code points; the note says they are there.
    $("edit-note").textContent = state.page.levels.full.match(HIDDEN)
      ? "This note holds characters that reorder or hide text: the box shows it as a browser lays it out, the full level above shows each as ⟨U+…⟩."
      : "";
    // The text the edit starts from: a save is refused if the note was rewritten since.
    state.editFrom = state.page.fingerprint;
    $("edit-text").focus();
  });
  $("edit-cancel").addEventListener("click", () => { $("edit-form").hidden = true; $("edit").focus(); });
  $("edit-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await post(`api/pages/${encodeURIComponent(state.page.page_id)}/edit`, { content: $("edit-text").value, was: state.editFrom });
      say("Note saved.");
      await openPage(state.page.page_id);
      refine(true);
    } catch (error) { $("edit-error").textContent = error.message; }
  });
  for (const [id, load] of [["context-session", loadContext], ["tools-session", loadTools]]) {
    $(id).addEventListener("change", async () => {
      try {
        if ($(id).value === MORE_SESSIONS) await moreSessions($(id));
        // The namespace-wide tool list keeps its rows; the session's lists start again.
        await load(false, id === "tools-session");
      } catch (error) { say(error.message); }
    });
  }
  $("detail-title").tabIndex = -1;
}

async function start() {
  wire();
  wireHome();
  // The version before the first drawing: any write after it shows up at the next poll.
  try { state.version = (await api("api/version")).version; } catch (error) { say(error.message); }
  refresh();
  setInterval(poll, 2000);
}

// Every script of the page (home.js, markdown.js) has run by then.
document.addEventListener("DOMContentLoaded", start);
