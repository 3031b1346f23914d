// The first screen: the person's memory. Their notes (pinned first) and their conversations (by
// title, or by project and first prompt), search across both as they type, and a reader beside the
// list (over it on a phone) for a note (rendered markdown, versions, Pin, Edit, Forget) or a
// conversation (a thread, oldest first). Ids, levels, tokens and access counts are one step away,
// under the reader's Details, and in the agent internals' All pages.
"use strict";

const REMEMBERED = new Set(["note", "preference", "claim", "summary", "procedure"]);
const ROLE_NAMES = { user: "You", assistant: "Assistant", system: "System", tool: "Tool" };
// A key memvm gives a page itself (msg_000001, note_000002): not worth showing as a name.
const MADE_KEY = /^(msg|tool|claim|note|pref|sum|proc)_\d{6}/;
const FIND_DELAY_MS = 250;

// What the reader shows: { kind: "note", id } or { kind: "conversation", session }, and for a
// conversation its messages and where the next screen of them starts.
const reading = { open: null, messages: [], after: null, page: null };
let findTimer = null;

function day(seconds) {
  const d = new Date(seconds * 1000);
  return d.toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });
}

function projectName(project) {
  if (!project) return "";
  const parts = String(project).split(/[\\/]/).filter(Boolean);
  return parts.length ? parts[parts.length - 1] : String(project);
}

function conversationName(talk) {
  if (talk.title) return talk.title;
  if (talk.first_line) return talk.first_line;
  return "A conversation with no words from you";
}

// One card of a list: a button that opens it in the reader, with lines under its name.
function card(name, lines, key, open) {
  const item = document.createElement("li");
  const button = document.createElement("button");
  button.type = "button";
  button.className = "card";
  button.dataset.key = key;
  const title = document.createElement("span");
  title.className = "card-title";
  title.textContent = shown(name);
  button.append(title);
  for (const line of lines.filter(Boolean)) {
    const part = document.createElement("span");
    part.className = "card-line";
    part.textContent = shown(line);
    button.append(part);
  }
  button.addEventListener("click", open);
  item.append(button);
  return item;
}

function empty(list, text) {
  const item = document.createElement("li");
  item.className = "muted";
  item.textContent = text;
  list.append(item);
}

function noteLines(note) {
  const kind = note.type === "note" ? "" : note.type;
  const key = MADE_KEY.test(note.page_id) ? "" : note.page_id;
  const facts = [note.pinned ? "Pinned" : "", kind, day(note.created_at), note.expires_at ? `until ${day(note.expires_at)}` : ""];
  return [facts.filter(Boolean).join(" · "), key ? `key ${key}` : ""];
}

function drawNotes(notes) {
  const list = $("notes");
  list.replaceChildren();
  for (const note of notes) {
    list.append(card(markdownAsLine(note.text), noteLines(note), `note:${note.page_id}`, () => openNote(note.page_id)));
  }
  if (!notes.length) empty(list, "Nothing remembered yet. What a model remembers, and notes you add, show here.");
}

function conversationLines(talk) {
  const where = projectName(talk.project);
  const facts = [day(talk.last_at), count(talk.messages, "message"), where ? `in ${where}` : ""];
  return [facts.filter(Boolean).join(" · "), talk.title && talk.first_line ? talk.first_line : ""];
}

function drawConversations(talks) {
  const list = $("conversations");
  list.replaceChildren();
  for (const talk of talks) {
    list.append(card(conversationName(talk), conversationLines(talk), `talk:${talk.session}`, () => openConversation(talk.session)));
  }
  if (!talks.length) empty(list, "No conversations yet. Imports and the hosts' hooks bring them here.");
}

async function loadHome(keep = false) {
  try {
    await loadList("notes", "api/notes", "notes", { keep });
    keepingFocus(() => drawNotes(lists.notes.rows));
    await loadList("conversations", "api/conversations", "conversations", { keep });
    keepingFocus(() => drawConversations(lists.conversations.rows));
    if ($("find").value.trim()) await find($("find").value);
    if (keep && reading.open) await redrawReader();
  } catch (error) { say(error.message); }
}

// Search across notes and conversations as the person types: the lists give way to what matched.
async function find(text) {
  const asked = text.trim();
  $("found-section").hidden = !asked;
  $("notes-section").hidden = $("conversations-section").hidden = Boolean(asked);
  if (!asked) { say(""); return; }
  try {
    const found = await api(`api/search?${new URLSearchParams({ q: asked })}`);
    if ($("find").value.trim() !== asked) return; // typed on meanwhile: a later answer draws
    const list = $("found");
    // Conversations whose title (or first prompt) holds every word asked, among those listed.
    const words = asked.toLowerCase().split(/\s+/);
    const titled = (lists.conversations?.rows || []).filter((talk) => {
      const name = `${talk.title || ""} ${talk.first_line}`.toLowerCase();
      return words.every((word) => name.includes(word));
    });
    keepingFocus(() => {
      list.replaceChildren();
      for (const talk of titled) {
        list.append(card(conversationName(talk), ["Conversation", ...conversationLines(talk)], `talk:${talk.session}`, () => openConversation(talk.session)));
      }
      for (const hit of found.results) {
        const note = REMEMBERED.has(hit.type);
        const said = ROLE_NAMES[hit.role] || hit.type;
        const lines = [note ? `${hit.pinned ? "Pinned · " : ""}${hit.type}` : `${said} in a conversation`, hit.created_at ? day(hit.created_at) : ""];
        const open = note ? () => openNote(hit.page_id) : () => openConversation(hit.session, hit.page_id);
        list.append(card(markdownAsLine(hit.snippet), [lines.filter(Boolean).join(" · ")], `hit:${hit.page_id}`, open));
      }
      if (!found.results.length && !titled.length) empty(list, "Nothing matches. Try other words.");
    });
    const matched = titled.length + found.results.length;
    say(matched ? `${count(matched, "match", "matches")}, best first.` : "Nothing matches.");
  } catch (error) { say(error.message); }
}

function showReader() {
  $("reader").hidden = false;
  document.body.classList.add("reading");
}

function closeReader() {
  const key = reading.open && (reading.open.kind === "note" ? `note:${reading.open.id}` : `talk:${reading.open.session}`);
  reading.open = null;
  reading.page = null;
  $("reader").hidden = true;
  $("note-form").hidden = true;
  document.body.classList.remove("reading");
  // The card it was opened from: the one still shown (a conversation may be listed twice, in the
  // list and among the matches of a search).
  const opener = key && [...document.querySelectorAll(`[data-key="${CSS.escape(key)}"]`)].find((card) => card.offsetParent);
  (opener || $("find")).focus();
}

function readerMeta(parts) {
  fillFields($("reader-meta"), parts);
}

function details(rows) {
  const list = $("reader-facts");
  list.replaceChildren();
  for (const [name, value] of rows) {
    const term = document.createElement("dt");
    term.textContent = name;
    const said = document.createElement("dd");
    said.textContent = shown(value);
    list.append(term, said);
  }
}

async function openNote(pageId, quietly = false) {
  try {
    const page = await api(`api/pages/${encodeURIComponent(pageId)}`);
    if (quietly && (reading.open?.kind !== "note" || reading.open.id !== pageId)) return;
    reading.open = { kind: "note", id: pageId };
    reading.page = page;
    showReader();
    $("reader-title").textContent = shown(MADE_KEY.test(page.page_id) ? (page.type === "note" ? "Note" : page.type) : page.page_id);
    readerMeta([page.pinned ? "Pinned" : "", `written ${when(page.created_at)}`, page.version > 1 ? `version ${page.version}` : "", page.expires_at !== null ? `kept until ${when(page.expires_at)}` : ""]);
    $("reader-actions").hidden = false;
    $("reader-pin").textContent = page.pinned ? "Unpin" : "Pin";
    $("reader-edit").hidden = !page.editable;
    $("more-messages").hidden = true;
    keepingFocus(() => {
      const body = $("reader-body");
      body.replaceChildren(renderMarkdown(page.levels.full));
      const versions = $("versions-list");
      versions.replaceChildren();
      for (const version of [...page.versions].reverse()) {
        const box = document.createElement("section");
        const title = document.createElement("h4");
        title.textContent = `Version ${version.version}, written ${when(version.written_at)}, replaced ${when(version.superseded_at)}`;
        const text = document.createElement("div");
        text.className = "prose";
        text.append(renderMarkdown(version.content));
        box.append(title, text);
        versions.append(box);
      }
      $("reader-versions").hidden = !page.versions.length;
    });
    details([
      ["Page id", page.page_id], ["Type", page.type], ["Session", page.session], ["Written by", page.provenance],
      ["Last read", when(page.last_access)], ["Times read", String(page.access_count)], ["Importance", String(page.importance)],
      ...Object.entries(page.tokens).map(([level, tokens]) => [`Tokens, ${level}`, String(tokens)]),
    ]);
    if (!quietly) $("reader-title").focus();
  } catch (error) {
    say(error.message);
    if (quietly) closeReader();
  }
}

function drawMessages() {
  const list = $("thread");
  keepingFocus(() => {
    list.replaceChildren();
    for (const message of reading.messages) {
      const item = document.createElement("li");
      item.className = `message from-${message.role || message.type}`;
      item.dataset.key = `message:${message.page_id}`;
      item.tabIndex = -1;
      const head = document.createElement("p");
      head.className = "message-head";
      const who = document.createElement("strong");
      who.textContent = message.type === "tool_result" ? "Tool result" : ROLE_NAMES[message.role] || "Message";
      const at = document.createElement("time");
      at.dateTime = new Date(message.created_at * 1000).toISOString();
      at.textContent = when(message.created_at);
      head.append(who, " · ", at);
      const text = document.createElement("div");
      text.className = "prose";
      text.append(renderMarkdown(message.text));
      item.append(head, text);
      if (message.chars > message.text.length) {
        const cut = document.createElement("p");
        cut.className = "muted";
        cut.textContent = `Shown in part: ${message.chars.toLocaleString()} characters in all (All pages shows it whole).`;
        item.append(cut);
      }
      list.append(item);
    }
  });
  $("more-messages").hidden = !reading.after;
}

async function loadMessages(session, append) {
  const query = new URLSearchParams();
  if (append && reading.after) query.set("after", reading.after);
  const screen = await api(`api/conversations/${encodeURIComponent(session)}?${query}`);
  reading.messages = append ? reading.messages.concat(screen.messages) : screen.messages;
  reading.after = screen.next;
}

// A conversation, oldest first; `at` (a page id, from a search) is scrolled to once loaded.
async function openConversation(session, at = null, quietly = false) {
  try {
    const shownBefore = quietly ? reading.messages.length : 0;
    await loadMessages(session, false);
    while (reading.after && (reading.messages.length < shownBefore || (at && !reading.messages.some((m) => m.page_id === at)))) {
      await loadMessages(session, true);
    }
    if (quietly && reading.open?.session !== session) return;
    reading.open = { kind: "conversation", session };
    reading.page = null;
    showReader();
    const talk = (lists.conversations?.rows || []).find((row) => row.session === session);
    $("reader-title").textContent = shown(talk ? conversationName(talk) : "Conversation");
    const first = reading.messages[0];
    readerMeta([
      talk && talk.project ? `in ${projectName(talk.project)}` : "",
      first ? `started ${when(first.created_at)}` : "",
      talk ? count(talk.messages, "message") : "",
    ]);
    $("reader-actions").hidden = true;
    $("note-form").hidden = true;
    $("reader-versions").hidden = true;
    $("reader-body").replaceChildren();
    const thread = document.createElement("ol");
    thread.id = "thread";
    thread.className = "thread plain";
    thread.setAttribute("aria-label", "Messages, oldest first");
    $("reader-body").append(thread);
    drawMessages();
    details([["Session", session], ...(talk && talk.project ? [["Project", talk.project]] : [])]);
    if (at) {
      const target = document.querySelector(`[data-key="${CSS.escape(`message:${at}`)}"]`);
      if (target) { target.scrollIntoView({ block: "center" }); target.focus(); return; }
    }
    if (!quietly) $("reader-title").focus();
  } catch (error) { say(error.message); }
}

async function redrawReader() {
  if ($("note-form").hidden === false) return; // a note being written keeps its text
  if (reading.open.kind === "note") await openNote(reading.open.id, true);
  else await openConversation(reading.open.session, null, true);
}

function openNoteForm(editing) {
  const form = $("note-form");
  form.hidden = false;
  $("note-error").textContent = "";
  $("note-new-fields").hidden = editing;
  $("note-form-title").textContent = editing ? "Edit note" : "New note";
  if (editing) {
    $("note-text").value = reading.page.levels.full;
    // The text the edit starts from: a save is refused if the note was rewritten since.
    state.editFrom = reading.page.fingerprint;
  } else {
    reading.open = { kind: "new" };
    reading.page = null;
    showReader();
    $("reader-title").textContent = "New note";
    readerMeta([]);
    $("reader-actions").hidden = true;
    $("reader-versions").hidden = true;
    $("reader-body").replaceChildren();
    details([]);
    $("more-messages").hidden = true;
    $("note-text").value = "";
    $("note-key").value = "";
    $("note-days").value = "";
  }
  $("note-text").focus();
}

async function saveNote(event) {
  event.preventDefault();
  try {
    if (reading.open?.kind === "note") {
      await post(`api/pages/${encodeURIComponent(reading.open.id)}/edit`, { content: $("note-text").value, was: state.editFrom });
      $("note-form").hidden = true;
      say("Note saved.");
      await openNote(reading.open.id);
    } else {
      const body = { content: $("note-text").value };
      if ($("note-key").value.trim()) body.key = $("note-key").value.trim();
      if ($("note-days").value.trim()) body.expires_in_days = Number($("note-days").value);
      const written = await post("api/notes", body);
      $("note-form").hidden = true;
      say("Note saved.");
      await openNote(written.page_id);
    }
    await loadHome(true);
  } catch (error) { $("note-error").textContent = error.message; }
}

function cancelNote() {
  $("note-form").hidden = true;
  if (reading.open?.kind === "new") closeReader();
  else $("reader-edit").focus();
}

function wireHome() {
  $("find").addEventListener("input", () => {
    clearTimeout(findTimer);
    findTimer = setTimeout(() => find($("find").value), FIND_DELAY_MS);
  });
  $("find-form").addEventListener("submit", (event) => { event.preventDefault(); clearTimeout(findTimer); find($("find").value); });
  $("new-note").addEventListener("click", () => openNoteForm(false));
  $("reader-close").addEventListener("click", closeReader);
  $("reader-edit").addEventListener("click", () => openNoteForm(true));
  $("note-form").addEventListener("submit", saveNote);
  $("note-cancel").addEventListener("click", cancelNote);
  $("reader-pin").addEventListener("click", async () => {
    try {
      const pinned = !reading.page.pinned;
      await post(`api/pages/${encodeURIComponent(reading.open.id)}/pin`, { pinned });
      say(pinned ? "Pinned: listed first, and kept in every session's context." : "Unpinned.");
      await openNote(reading.open.id, true);
      $("reader-pin").focus();
      await loadHome(true);
    } catch (error) { say(error.message); }
  });
  $("reader-forget").addEventListener("click", () => {
    state.forgetting = reading.open.id;
    $("confirm-forget").showModal();
    $("confirm-no").focus();
  });
  $("more-messages").addEventListener("click", async () => {
    try {
      await loadMessages(reading.open.session, true);
      drawMessages();
    } catch (error) { say(error.message); }
  });
  for (const name of ["notes", "conversations"]) {
    $(`more-${name}`).addEventListener("click", async () => {
      try {
        await loadList(name, `api/${name}`, name, { append: true });
        keepingFocus(() => (name === "notes" ? drawNotes : drawConversations)(lists[name].rows));
        if ($(`more-${name}`).hidden) focusList(name);
      } catch (error) { say(error.message); }
    });
  }
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !$("reader").hidden && $("note-form").hidden && !$("confirm-forget").open) closeReader();
  });
}

// Forgotten from the reader: the confirm dialog is shared with All pages, which sets state.page.
async function forgetFromReader() {
  const pageId = state.forgetting;
  state.forgetting = null;
  await post(`api/pages/${encodeURIComponent(pageId)}/forget`, { confirm: true });
  say(`Forgot ${MADE_KEY.test(pageId) ? "the note" : pageId}.`);
  closeReader();
  await loadHome(true);
}
