// Markdown to DOM nodes. Nothing from an answer is ever parsed as HTML: every piece of text becomes a
// text node, and a link keeps its href only when it is http(s) or mailto. Covers what answers use:
// headings, paragraphs, bold/italic/code, links, lists (nested by indent), tables, quotes, code blocks, rules.

const SAFE = new Set(["http:", "https:", "mailto:"]);

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text != null) node.textContent = text;
  return node;
}

// A proposal's files ("生成方案") are linked as paths on this server when no public URL is configured: the
// panel is served from this server, so they open against its own origin; every other relative link is dropped.
const OWN_FILES = "/v1/proposals/files/";
const OWN_ORIGIN =
  typeof location !== "undefined" && /^https?:$/.test(location.protocol) ? `${location.origin}/` : null;

export function safeHref(href) {
  try {
    const base = OWN_ORIGIN && href.startsWith(OWN_FILES) ? OWN_ORIGIN : "https://invalid.example/";
    const url = new URL(href, base);
    if (!SAFE.has(url.protocol) || url.host === "invalid.example") return null;
    return url.href;
  } catch {
    return null;
  }
}

export function link(text, href) {
  const a = el("a", null, text);
  a.href = href;
  a.target = "_blank";
  a.rel = "noopener noreferrer";
  return a;
}

// inline: `code`, **bold**, __bold__, *em*, _em_ (underscores not inside words: window.__x stays as typed), [text](url), [n] citations, plain text
const INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([\s\S]+?)\*\*|(?<![\w])__([^\s_][\s\S]*?)__(?![\w])|\*([^\s*][\s\S]*?)\*|(?<![\w])_([^\s_][\s\S]*?)_(?![\w])|\[([^\]\n]+)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)|\[(\d{1,2})\](?!\()/g;

export function inline(text, parent, ctx) {
  let last = 0;
  const re = new RegExp(INLINE.source, "g"); // one per call: nested calls must not share lastIndex
  for (let m; (m = re.exec(text)); ) {
    if (m.index > last) parent.append(unescape(text.slice(last, m.index)));
    if (m[1]) parent.append(el("code", null, m[2]));
    else if (m[3] != null || m[4] != null) inline(m[3] ?? m[4], parent.appendChild(el("strong")), ctx);
    else if (m[5] != null || m[6] != null) inline(m[5] ?? m[6], parent.appendChild(el("em")), ctx);
    else if (m[7] != null) {
      const href = safeHref(m[8]);
      if (href) inline(m[7], parent.appendChild(link("", href)), ctx);
      else inline(m[7], parent, ctx); // a local path or a script URL: the words, no link
    } else if (m[9] != null) {
      const cite = ctx && ctx.citations && ctx.citations[Number(m[9]) - 1];
      const href = cite && safeHref(cite.source);
      if (href) {
        const a = link(`[${m[9]}]`, href);
        a.className = "cite";
        a.title = cite.title || "";
        parent.append(a);
      } else parent.append(m[0]);
    }
    last = re.lastIndex;
  }
  if (last < text.length) parent.append(unescape(text.slice(last)));
  return parent;
}

function unescape(s) {
  return s.replace(/\\([\\`*_{}[\]()#+\-.!|>])/g, "$1");
}

const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const FENCE = /^ {0,3}(```|~~~)\s*([\w+-]*)\s*$/;
const ITEM = /^(\s*)([-*+]|\d{1,3}[.)])\s+(.*)$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;
const TABLE_SEP = /^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$/;

function cells(line) {
  let s = line.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
  return s.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
}

// a figure with a short sign or unit around it: ~1,121 GB, 989.4, ¥2.7 万, 7.8 月, 50%
const FIGURE = /^\S{0,3}\d[\d.,]*\s?\S{0,10}$/u;

function table(lines, ctx) {
  const wrap = el("div", "table-wrap");
  wrap.tabIndex = 0; // scrollable regions must be reachable by keyboard
  const t = wrap.appendChild(el("table"));
  const head = cells(lines[0]);
  const align = cells(lines[1]).map((c) => (c.endsWith(":") ? (c.startsWith(":") ? "center" : "right") : ""));
  const tr = t.appendChild(el("thead")).appendChild(el("tr"));
  head.forEach((c, i) => {
    const th = inline(c, el("th"), ctx);
    th.scope = "col";
    if (align[i]) th.classList.add("a-" + align[i]);
    tr.append(th);
  });
  const body = t.appendChild(el("tbody"));
  for (const line of lines.slice(2)) {
    const row = body.appendChild(el("tr"));
    cells(line).slice(0, head.length).forEach((c, i) => {
      const td = inline(c, el("td"), ctx);
      if (FIGURE.test(td.textContent.trim())) td.classList.add("num"); // "1,121 GB" stays on one line
      if (align[i]) td.classList.add("a-" + align[i]);
      row.append(td);
    });
  }
  return wrap;
}

function list(lines, start, ctx) {
  // a run of list items (and their continuation lines); nested lists by deeper indent
  const first = ITEM.exec(lines[start]);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const root = el(ordered ? "ol" : "ul");
  if (ordered && parseInt(first[2], 10) !== 1) root.start = parseInt(first[2], 10);
  let i = start;
  let li = null;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      const next = lines[i + 1];
      if (next && ITEM.exec(next) && ITEM.exec(next)[1].length >= indent) { i++; continue; }
      break;
    }
    const m = ITEM.exec(line);
    if (m && m[1].length > indent && li) {
      const [sub, end] = list(lines, i, ctx);
      li.append(sub);
      i = end;
      continue;
    }
    if (m && m[1].length < indent) break;
    if (m) {
      if (/\d/.test(m[2]) !== ordered) break;
      li = root.appendChild(el("li"));
      inline(m[3], li, ctx);
    } else if (li && (/^\s/.test(line) || !startsBlock(line))) {
      li.append(" ");
      inline(line.trim(), li, ctx);
    } else break;
    i++;
  }
  return [root, i];
}

function startsBlock(line) {
  return HEADING.test(line) || FENCE.test(line) || QUOTE.test(line) || RULE.test(line) || ITEM.test(line);
}

// render(markdown, ctx) -> DocumentFragment; ctx.citations turns [n] into links to the cited sources
export function render(md, ctx = {}) {
  const out = document.createDocumentFragment();
  const lines = String(md || "").replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i++; continue; }
    let m;
    if ((m = FENCE.exec(line))) {
      const code = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(m[1])) code.push(lines[i++]);
      i++;
      const pre = out.appendChild(el("pre"));
      pre.tabIndex = 0;
      pre.append(el("code", null, code.join("\n")));
      continue;
    }
    if ((m = HEADING.exec(line))) {
      out.append(inline(m[2], el("h" + Math.min(6, m[1].length + 2)), ctx));
      i++;
      continue;
    }
    if (RULE.test(line)) { out.append(el("hr")); i++; continue; }
    if (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes("-")) {
      const rows = [line, lines[i + 1]];
      i += 2;
      while (i < lines.length && lines[i].includes("|") && lines[i].trim()) rows.push(lines[i++]);
      out.append(table(rows, ctx));
      continue;
    }
    if (QUOTE.test(line)) {
      const inner = [];
      while (i < lines.length && (m = QUOTE.exec(lines[i]))) { inner.push(m[1]); i++; }
      const q = out.appendChild(el("blockquote"));
      q.append(render(inner.join("\n"), ctx));
      continue;
    }
    if (ITEM.test(line)) {
      const [node, end] = list(lines, i, ctx);
      out.append(node);
      i = end;
      continue;
    }
    const para = [line.trim()];
    i++;
    while (i < lines.length && lines[i].trim() && !startsBlock(lines[i]) &&
           !(lines[i].includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]))) para.push(lines[i++].trim());
    const p = out.appendChild(el("p"));
    para.forEach((text, k) => {
      if (k) p.append(el("br"));
      inline(text, p, ctx);
    });
  }
  return out;
}
