/* gpu-advisor widget loader: <script src="…/widget.js" data-key="pk_…" defer></script> (served by the API)
   Options: data-lang (zh|en|auto), data-title, data-position (right|left), data-theme (light|dark|auto);
   colours from the host page's CSS custom properties --gpa-accent, --gpa-bg, --gpa-fg, --gpa-launcher. */
(() => {
  const me = document.currentScript;
  if (!me || window.__gpuAdvisorWidget) return;
  window.__gpuAdvisorWidget = true;
  const d = me.dataset;
  const base = new URL("./", me.src);
  const key = d.key || "";
  const zh = d.lang === "zh" || (d.lang !== "en" && /^zh/i.test(navigator.language || ""));
  const lang = d.lang === "zh" || d.lang === "en" ? d.lang : "auto";
  const theme = ["light", "dark"].includes(d.theme) ? d.theme : "auto";
  const left = d.position === "left";
  const title = (d.title || (zh ? "GPU 选型助手" : "GPU advisor")).slice(0, 60);
  const say = (msg) => console.error(`[gpu-advisor widget] ${msg}`);

  const css = `:host{all:initial}
.l{position:fixed;bottom:20px;${left ? "left" : "right"}:20px;z-index:2147483000;width:56px;height:56px;border:0;border-radius:50%;
background:var(--gpa-launcher,var(--gpa-accent,#1d4ed8));color:#fff;box-shadow:0 4px 14px rgba(0,0,0,.25);cursor:pointer;display:grid;place-items:center}
.l:focus-visible{outline:2px solid transparent;box-shadow:0 0 0 3px #fff,0 0 0 6px #b45309}
.l svg{width:28px;height:28px;fill:none;stroke:currentColor;stroke-width:2;stroke-linecap:round;stroke-linejoin:round}
.p{position:fixed;bottom:88px;${left ? "left" : "right"}:20px;z-index:2147483000;width:min(400px,calc(100vw - 24px));
height:min(640px,calc(100vh - 110px));border-radius:14px;overflow:hidden;box-shadow:0 10px 40px rgba(0,0,0,.3);
background:${theme === "dark" ? "#111827" : "#fff"};transition:opacity .18s ease,transform .18s ease}
${theme === "auto" ? "@media (prefers-color-scheme:dark){.p{background:#111827}}" : ""}
.p[hidden]{display:none}
.p iframe{width:100%;height:100%;border:0;display:block}
@media (max-width:480px){.p{inset:0;width:100%;height:100%;border-radius:0}.open .l{display:none}}
@media (prefers-reduced-motion:reduce){.p{transition:none}}`;

  const mount = () => {
    const host = document.createElement("div");
    host.setAttribute("data-gpu-advisor", "");
    const root = host.attachShadow({ mode: "open" });
    try {
      const sheet = new CSSStyleSheet();
      sheet.replaceSync(css);
      root.adoptedStyleSheets = [sheet];
    } catch {
      const style = document.createElement("style");
      style.textContent = css;
      root.append(style);
    }
    const wrap = document.createElement("div");
    const btn = document.createElement("button");
    btn.type = "button";
    btn.className = "l";
    btn.setAttribute("aria-label", zh ? `打开${title}` : `Open ${title}`);
    btn.setAttribute("aria-expanded", "false");
    btn.setAttribute("aria-haspopup", "dialog");
    const ns = "http://www.w3.org/2000/svg";
    const icon = document.createElementNS(ns, "svg");
    const path = document.createElementNS(ns, "path");
    icon.setAttribute("viewBox", "0 0 24 24");
    icon.setAttribute("aria-hidden", "true");
    path.setAttribute("d", "M21 12a8 8 0 0 1-11.6 7.1L4 20l1-4.6A8 8 0 1 1 21 12z");
    icon.append(path);
    btn.append(icon);
    const panel = document.createElement("div");
    panel.className = "p";
    panel.id = "gpa-panel";
    panel.hidden = true;
    btn.setAttribute("aria-controls", panel.id);
    wrap.append(btn, panel);
    root.append(wrap);
    document.body.append(host);
    // the icon in white, or near-black on a light launcher colour (3:1 at least against its background)
    const lum = (getComputedStyle(btn).backgroundColor.match(/[\d.]+/g) || [0, 0, 0]).slice(0, 3)
      .map((c) => ((c /= 255) <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
    if (0.2126 * lum[0] + 0.7152 * lum[1] + 0.0722 * lum[2] > 0.3) btn.style.color = "#111827";
    let frame = null;
    let ready = false;

    const colors = {};
    const style = getComputedStyle(host);
    for (const name of ["accent", "bg", "fg", "launcher"]) {
      const v = style.getPropertyValue(`--gpa-${name}`).trim();
      if (v) colors[name] = v;
    }
    const focusPanel = () => {
      if (!frame) return;
      frame.focus();
      if (ready) frame.contentWindow.postMessage({ type: "gpa:focus" }, base.origin);
    };
    const open = () => {
      if (!frame) {
        const q = new URLSearchParams({ key, lang, title, theme, parent: location.origin, colors: JSON.stringify(colors) });
        frame = document.createElement("iframe");
        frame.src = new URL(`widget?${q}`, base).href;
        frame.title = title;
        frame.allow = "clipboard-write";
        frame.referrerPolicy = "no-referrer";
        panel.append(frame);
      }
      panel.hidden = false;
      wrap.classList.add("open");
      btn.setAttribute("aria-expanded", "true");
      btn.setAttribute("aria-label", zh ? `关闭${title}` : `Close ${title}`);
      focusPanel();
    };
    const close = () => {
      panel.hidden = true;
      wrap.classList.remove("open");
      btn.setAttribute("aria-expanded", "false");
      btn.setAttribute("aria-label", zh ? `打开${title}` : `Open ${title}`);
      btn.focus(); // focus goes back to the launcher
    };
    btn.addEventListener("click", () => (panel.hidden ? open() : close()));
    root.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && !panel.hidden) close();
    });
    window.addEventListener("message", (e) => {
      if (!frame || e.source !== frame.contentWindow || e.origin !== base.origin || !e.data) return;
      if (e.data.type === "gpa:ready") {
        ready = true;
        if (!panel.hidden) focusPanel();
      } else if (e.data.type === "gpa:close") close();
    });
    window.gpuAdvisorWidget = { open, close };
  };

  const start = () => {
    const q = new URLSearchParams({ key, lang: zh ? "zh" : "en" });
    fetch(new URL(`widget/config?${q}`, base), { mode: "cors", credentials: "omit" })
      .then((r) => r.json().then((j) => [r.ok, j]))
      .then(([ok, j]) => (ok ? mount() : say((j.error && j.error.message) || "refused")))
      .catch(() => say(zh ? "无法连接助手服务。" : "The advisor server cannot be reached."));
  };
  if (document.body) start();
  else document.addEventListener("DOMContentLoaded", start);
})();
