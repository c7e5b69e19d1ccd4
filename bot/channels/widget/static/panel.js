// The chat panel: inside the widget's iframe (data-mode="widget") or as the full page /chat ("page").
import { pickLang, texts } from "./i18n.js";
import { render } from "./markdown.js";
import { charts } from "./charts.js";
import { askStream, HttpError, sendFeedback } from "./stream.js";
import { clear, load, save, slim, storageKey } from "./store.js";

const body = document.body;
const cfg = { ...body.dataset };
const mode = document.documentElement.dataset.mode;
const lang = pickLang(cfg.lang);
const T = texts(lang);
const base = new URL("./", location.href);
const key = cfg.key || "";
const parent = cfg.parent || "";
const $ = (id) => document.getElementById(id);
const log = $("log"), input = $("input"), form = $("composer"), sendBtn = $("send"), stopBtn = $("stop");
const announce = $("announce");
const storeName = storageKey(parent, key);
let state = load(storeName);
let current = null; // { controller } while an answer streams
let composing = false;

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text != null) node.textContent = text;
  return node;
}

function button(cls, label, text, onClick) {
  const b = el("button", cls, text);
  b.type = "button";
  if (label) b.setAttribute("aria-label", label);
  b.addEventListener("click", onClick);
  return b;
}

// ---- set-up: language, title, colours, labels -------------------------------------------------------
document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
const title = cfg.title || T.title;
document.title = title;
$("title").textContent = title;
$("foot").textContent = T.foot;
for (const node of document.querySelectorAll("[data-i18n]")) node.textContent = T[node.dataset.i18n];
for (const node of document.querySelectorAll("[data-i18n-label]")) node.setAttribute("aria-label", T[node.dataset.i18nLabel]);
for (const node of document.querySelectorAll("[data-i18n-placeholder]")) node.placeholder = T[node.dataset.i18nPlaceholder];
hostColors();
if (mode === "widget") {
  document.querySelector(".app").setAttribute("role", "dialog");
  document.querySelector(".app").setAttribute("aria-labelledby", "title");
} else {
  $("close").hidden = true;
}

// The host page's colours (--gpa-accent, --gpa-bg, --gpa-fg): its background decides the light or dark
// palette, text on the accent is white or near-black (whichever reads), a text colour that does not
// reach 4.5:1 on the background is left out (WCAG AA).
function rgb(value) {
  const probe = el("i");
  probe.style.color = value;
  body.append(probe);
  const m = getComputedStyle(probe).color.match(/[\d.]+/g);
  probe.remove();
  return m ? m.slice(0, 3).map(Number) : null;
}

function luminance([r, g, b]) {
  const lin = (c) => ((c /= 255) <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

function contrast(a, b) {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

function hostColors() {
  let colors = {};
  try { colors = JSON.parse(cfg.colors || "{}"); } catch { /* no colours given */ }
  const root = document.documentElement;
  const given = {};
  for (const [name, value] of Object.entries(colors)) {
    const parsed = typeof value === "string" && CSS.supports("color", value) ? rgb(value) : null;
    if (parsed) given[name] = [value, parsed];
  }
  if (given.bg) root.dataset.theme = luminance(given.bg[1]) > 0.18 ? "light" : "dark";
  const bg = given.bg ? given.bg[1] : rgb(getComputedStyle(body).backgroundColor);
  if (given.fg && bg && contrast(given.fg[1], bg) < 4.5) delete given.fg;
  for (const [name, [value]] of Object.entries(given)) root.style.setProperty(`--host-${name}`, value);
  if (given.accent) {
    const white = [255, 255, 255];
    root.style.setProperty("--accent-fg", contrast(white, given.accent[1]) >= 4.5 ? "#ffffff" : "#111827");
  }
}

function toParent(message) {
  if (mode === "widget" && parent && window.parent !== window) window.parent.postMessage(message, parent);
}

// ---- rendering --------------------------------------------------------------------------------------
// Follow the answer as it grows, but never past the question: a long answer is read from its start,
// with the question at the top of the view. Never scrolls back up (the reader may have scrolled on).
function follow(turn) {
  const section = turn && turn.view && turn.view.section;
  if (!section || !section.isConnected) return;
  const target = Math.min(log.scrollHeight - log.clientHeight, section.offsetTop - 8);
  if (target > log.scrollTop + 1) log.scrollTop = target;
}

function welcome() {
  const box = el("div", "welcome");
  box.append(el("p", null, T.welcome));
  const chips = el("div", "chips");
  for (const q of T.examples) chips.append(button("chip", null, q, () => ask(q)));
  box.append(chips);
  return box;
}

function renderAll() {
  log.replaceChildren();
  if (!state.turns.length) log.append(welcome());
  state.turns.forEach((turn) => log.append(turnView(turn)));
  log.scrollTop = 0;
  follow(state.turns[state.turns.length - 1]);
}

function turnView(turn) {
  const section = el("section", "turn");
  const user = el("div", "msg user");
  user.append(el("span", "sr-only", `${T.you}: `), el("p", "q", turn.q));
  const bot = el("div", "msg bot");
  bot.append(el("span", "sr-only", `${T.advisor}: `));
  section.append(user, bot);
  turn.view = { section, bot };
  fillBot(turn);
  return section;
}

function fillBot(turn) {
  const { bot } = turn.view;
  bot.replaceChildren(el("span", "sr-only", `${T.advisor}: `));
  bot.setAttribute("aria-busy", turn.status === "pending" ? "true" : "false");
  if (turn.status === "pending") {
    const progress = el("ol", "progress");
    progress.append(el("li", "step", T.thinking));
    const answer = el("div", "answer md");
    bot.append(progress, answer);
    turn.view.progress = progress;
    turn.view.answer = answer;
    return;
  }
  const trace = turn.trace;
  if (turn.tools && turn.tools.length) {
    // what was worked out, kept after the answer (✓ per tool)
    const progress = el("ol", "progress");
    for (const tool of turn.tools) {
      const li = el("li", "step done", T.doneStep(T.tools[tool] || T.tools.other));
      li.dataset.tool = tool;
      progress.append(li);
    }
    bot.append(progress);
  }
  const answer = el("div", "answer md");
  if (trace) answer.append(render(trace.answer, { citations: trace.citations }));
  else if (turn.partial) answer.append(render(turn.partial));
  bot.append(answer);
  if (trace) {
    const figs = charts(trace, T, lang);
    if (figs.length) {
      // the picture goes next to the figures it shows: after the answer's first table (or first paragraph)
      const box = el("div", "charts");
      box.append(...figs);
      const anchor = answer.querySelector(".table-wrap") || answer.firstElementChild;
      if (anchor) anchor.after(box);
      else bot.append(box);
    }
  }
  if (turn.status === "stopped") bot.append(el("p", "note", T.stopped));
  if (turn.status === "error") bot.append(el("p", "error", turn.error || T.network));
  const actions = el("div", "actions");
  if (trace) {
    actions.append(rateButton(turn, 1, T.good), rateButton(turn, -1, T.bad));
    actions.append(button("act", T.copy, T.copy, () => copy(trace.answer)));
  }
  actions.append(button("act", T.retry, T.retry, () => ask(turn.q)));
  bot.append(actions);
  if (trace && trace.follow_ups && trace.follow_ups.length && turn === state.turns[state.turns.length - 1]) {
    const chips = el("div", "chips follow-ups");
    chips.setAttribute("role", "group");
    chips.setAttribute("aria-label", T.followUps);
    for (const q of trace.follow_ups.slice(0, 4)) chips.append(button("chip", null, q, () => ask(q)));
    bot.append(chips);
  }
}

// a thumb drawn as SVG (an emoji may have no font in a webview and show as an empty box); down = up turned over
const THUMB = "M3 10h4v10H3zM7 10l4-7c1.6 0 2.6 1.3 2.2 2.8L12.6 9H19a2 2 0 0 1 2 2.3l-1.2 6.9A2 2 0 0 1 17.8 20H7";

function thumb(down) {
  const NS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  const path = document.createElementNS(NS, "path");
  path.setAttribute("d", THUMB);
  if (down) path.setAttribute("transform", "rotate(180 12 12)");
  svg.append(path);
  return svg;
}

function rateButton(turn, rating, label) {
  const b = button("act rate", label, null, async () => {
    turn.rating = rating;
    for (const other of b.parentElement.querySelectorAll(".rate")) other.setAttribute("aria-pressed", String(other === b));
    await rate(turn, rating, null);
    commentForm(turn, rating, b);
  });
  b.append(thumb(rating < 0));
  b.setAttribute("aria-pressed", String(turn.rating === rating));
  return b;
}

function commentForm(turn, rating, rater) {
  const { bot } = turn.view;
  bot.querySelector(".comment")?.remove();
  const box = el("form", "comment");
  const id = `c-${Math.random().toString(36).slice(2)}`;
  const label = el("label", null, T.comment);
  label.htmlFor = id;
  const area = el("textarea");
  area.id = id;
  area.rows = 2;
  area.maxLength = 2000;
  const submit = el("button", "act", T.sendFeedback);
  submit.type = "submit";
  box.append(label, area, submit);
  box.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (area.value.trim()) await rate(turn, rating, area.value.trim());
    box.remove();
    rater.focus(); // the form is gone: back to the button that opened it
  });
  bot.querySelector(".actions").after(box); // under the buttons, above the follow-up questions
  area.focus();
}

async function rate(turn, rating, comment) {
  try {
    await sendFeedback({ base, key, lang, body: { conversation_id: turn.cid, turn: turn.index, rating, comment } });
    say(T.thanks);
  } catch (err) {
    say(T.feedbackFailed + (err.message || ""));
  }
  persist();
}

async function copy(text) {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const area = el("textarea");
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  say(T.copied);
}

function say(text) {
  announce.textContent = "";
  setTimeout(() => { announce.textContent = text; }, 50);
}

function persist() {
  save(storeName, {
    conversationId: state.conversationId,
    sent: state.sent,
    turns: state.turns.map(({ view, ...rest }) => rest),
  });
}

// ---- asking -----------------------------------------------------------------------------------------
function busy(on) {
  const hadFocus = document.activeElement === (on ? sendBtn : stopBtn);
  stopBtn.hidden = !on;
  sendBtn.hidden = on;
  body.classList.toggle("busy", on);
  if (hadFocus) (on ? stopBtn : input).focus(); // a hidden button must not take the keyboard focus with it
}

// a chip or button that asked was removed with the old view: the keyboard continues in the question box
// (on a touch screen the conversation takes it instead, so the on-screen keyboard does not pop up)
function keepFocus() {
  const active = document.activeElement;
  if (active && active !== body && active.isConnected) return;
  if (matchMedia("(pointer: coarse)").matches) log.focus({ preventScroll: true });
  else input.focus();
}

async function ask(text) {
  text = (text || "").trim();
  if (!text || current) return;
  if (!state.turns.length) log.replaceChildren();
  const turn = { q: text, status: "pending" };
  state.turns.push(turn);
  // only the last answer offers follow-up chips
  const prev = state.turns[state.turns.length - 2];
  prev && prev.view && prev.view.bot.querySelector(".follow-ups")?.remove();
  log.append(turnView(turn));
  follow(turn);
  input.value = "";
  grow();
  keepFocus();
  const controller = new AbortController();
  current = { controller };
  busy(true);
  let partial = "";
  let frame = 0;
  const paint = () => {
    frame = 0;
    turn.view.answer.replaceChildren(render(partial));
    follow(turn);
  };
  try {
    await askStream({
      base, key, lang, signal: controller.signal,
      body: state.conversationId ? { text, conversation_id: state.conversationId } : { text },
      onOpen(cid) {
        if (cid) state.conversationId = cid;
        turn.cid = state.conversationId;
        turn.index = state.sent++;
        persist();
      },
      onEvent(name, data) {
        if (name === "tool_started") {
          const li = el("li", "step", T.tools[data.tool] || T.tools.other);
          li.dataset.call = data.id;
          li.dataset.tool = data.tool;
          turn.tools = [...(turn.tools || []), data.tool];
          const steps = turn.view.progress;
          if (steps.firstChild && steps.firstChild.textContent === T.thinking) steps.replaceChildren();
          steps.append(li);
        } else if (name === "tool_finished") {
          const li = turn.view.progress.querySelector(`[data-call="${CSS.escape(String(data.id))}"]`);
          if (li) {
            li.classList.add("done");
            li.textContent = T.doneStep(li.textContent);
          }
        } else if (name === "delta") {
          partial += data.text;
          if (!frame) frame = requestAnimationFrame(paint);
        } else if (name === "final") {
          turn.trace = slim(data.trace);
          turn.cid = data.trace.conversation_id;
          state.conversationId = turn.cid;
          turn.status = "done";
        } else if (name === "error") {
          turn.status = "error";
          turn.error = data.message;
        }
      },
    });
    if (turn.status === "pending") {
      turn.status = "error";
      turn.error = T.network;
    }
  } catch (err) {
    if (err.name === "AbortError") {
      turn.status = "stopped";
      turn.partial = partial;
    } else {
      turn.status = "error";
      turn.error = err instanceof HttpError ? err.message : T.network;
    }
  } finally {
    if (frame) cancelAnimationFrame(frame);
    current = null;
    busy(false);
    fillBot(turn);
    keepFocus();
    persist();
    follow(turn);
    if (turn.status === "done") {
      const text = turn.view.bot.querySelector(".answer").textContent.replace(/\s+/g, " ").trim();
      say(`${T.done}${text.slice(0, 800)}`);
    }
    else say(turn.status === "stopped" ? T.stopped : turn.error);
  }
}

function grow() {
  input.style.height = "auto";
  input.style.height = `${Math.min(input.scrollHeight, 160)}px`;
}

// ---- events -----------------------------------------------------------------------------------------
form.addEventListener("submit", (e) => {
  e.preventDefault();
  ask(input.value);
});
input.addEventListener("compositionstart", () => { composing = true; });
input.addEventListener("compositionend", () => { composing = false; });
input.addEventListener("input", grow);
input.addEventListener("keydown", (e) => {
  if (e.key !== "Enter" || e.shiftKey) return; // Shift+Enter: a new line
  if (e.isComposing || composing || e.keyCode === 229) return; // the IME is choosing characters: not a send
  e.preventDefault();
  ask(input.value);
});
stopBtn.addEventListener("click", () => {
  current && current.controller.abort();
  input.focus();
});
$("new").addEventListener("click", () => {
  current && current.controller.abort();
  state = { conversationId: null, sent: 0, turns: [] };
  clear(storeName);
  renderAll();
  input.focus();
});
$("close").addEventListener("click", () => toParent({ type: "gpa:close" }));
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && mode === "widget") toParent({ type: "gpa:close" });
});
window.addEventListener("message", (e) => {
  if (e.source !== window.parent || e.origin !== parent) return;
  if (e.data && e.data.type === "gpa:focus") input.focus();
});

renderAll();
if (mode === "widget") toParent({ type: "gpa:ready" });
else input.focus();
