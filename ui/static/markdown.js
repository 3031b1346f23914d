// Markdown as a person reads it, built as elements with textContent only: stored text is data, so no
// HTML in it is ever parsed, a link goes only to http(s) or mailto and opens apart from the view, and
// an image is named, never fetched (a remote image would tell its server the note was read).
"use strict";

const SAFE_LINK = /^(https?:\/\/|mailto:)/i;

// The inline marks of one line: `code`, **strong**, *emphasis* or _emphasis_, [text](address) and
// ![alt](address), appended to `into` as elements holding text.
function inlineMarks(text, into) {
  const mark = /`([^`]+)`|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|\b_([^_\s][^_]*)_\b|(!?)\[([^\]]*)\]\(([^)\s]+)\)/g;
  let at = 0;
  for (const found of text.matchAll(mark)) {
    if (found.index > at) into.append(shown(text.slice(at, found.index)));
    const [, code, strong, strong2, em, em2, bang, label, address] = found;
    let element;
    if (code !== undefined) {
      element = document.createElement("code");
      element.textContent = shown(code);
    } else if (strong !== undefined || strong2 !== undefined) {
      element = document.createElement("strong");
      inlineMarks(strong ?? strong2, element);
    } else if (em !== undefined || em2 !== undefined) {
      element = document.createElement("em");
      inlineMarks(em ?? em2, element);
    } else if (bang) {
      element = document.createElement("span");
      element.className = "image-named";
      element.textContent = shown(`[image: ${label || "no description"}]`);
    } else if (SAFE_LINK.test(address)) {
      element = document.createElement("a");
      element.href = address;
      element.rel = "noopener noreferrer nofollow";
      element.target = "_blank";
      element.textContent = shown(label || address);
    } else {
      element = document.createTextNode(shown(found[0]));
    }
    into.append(element);
    at = found.index + found[0].length;
  }
  if (at < text.length) into.append(shown(text.slice(at)));
}

// Block structure: headings, fenced code, quotes, lists (- * + or 1.), and paragraphs; a line break
// inside a paragraph is kept, as people write notes line by line.
function renderMarkdown(text) {
  const out = document.createDocumentFragment();
  const lines = String(text).replace(/\r\n?/g, "\n").split("\n");
  let paragraph = null;
  let list = null;
  const closeParagraph = () => { paragraph = null; };
  const closeList = () => { list = null; };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (/^\s*```/.test(line)) {
      closeParagraph(); closeList();
      const code = [];
      for (i++; i < lines.length && !/^\s*```/.test(lines[i]); i++) code.push(lines[i]);
      const pre = document.createElement("pre");
      pre.tabIndex = 0;
      pre.textContent = shown(code.join("\n"));
      out.append(pre);
      continue;
    }
    if (!line.trim()) { closeParagraph(); closeList(); continue; }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      closeParagraph(); closeList();
      // Within a page that already has its own headings: a note's headings start at level 4.
      const element = document.createElement(`h${Math.min(6, heading[1].length + 3)}`);
      inlineMarks(heading[2], element);
      out.append(element);
      continue;
    }
    const quote = line.match(/^>\s?(.*)$/);
    if (quote) {
      closeList();
      const block = document.createElement("blockquote");
      inlineMarks(quote[1], block);
      out.append(block);
      closeParagraph();
      continue;
    }
    const item = line.match(/^\s*(?:([-*+])|(\d{1,9})[.)])\s+(.*)$/);
    if (item) {
      closeParagraph();
      const kind = item[1] ? "ul" : "ol";
      if (!list || list.tagName.toLowerCase() !== kind) {
        list = document.createElement(kind);
        out.append(list);
      }
      const entry = document.createElement("li");
      inlineMarks(item[3], entry);
      list.append(entry);
      continue;
    }
    closeList();
    if (paragraph) paragraph.append(document.createElement("br"));
    else {
      paragraph = document.createElement("p");
      out.append(paragraph);
    }
    inlineMarks(line, paragraph);
  }
  return out;
}

// A note's markdown as one line of a list: the marks dropped, a link as its text, an image named.
function markdownAsLine(text) {
  return String(text)
    .replace(/!\[([^\]]*)\]\([^)\s]*\)/g, (_, alt) => `[image: ${alt || "no description"}]`)
    .replace(/\[([^\]]*)\]\([^)\s]*\)/g, "$1")
    .replace(/(\*\*|__)(.+?)\1/g, "$2")
    .replace(/`([^`]+)`/g, "$1")
    .replace(/(^|\s)[*_]([^*_\s][^*_]*)[*_](?=\s|[.,;:!?]|$)/g, "$1$2")
    .replace(/^\s{0,3}(#{1,6}|>|[-*+]|\d{1,9}[.)])\s+/gm, "")
    .replace(/\s*\n\s*/g, " ")
    .trim();
}
