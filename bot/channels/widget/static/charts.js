// SVG pictures of the calculators' outputs in an answer's trace. The figures drawn are the tools' own
// (breakdown_gb, usable_gb, cumulative, breakeven_months, compare rows): nothing is re-computed here.
// Every chart is an <svg role="img"> with a text label; text is set with textContent only.

const NS = "http://www.w3.org/2000/svg";

function s(tag, attrs = {}, text) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text != null) node.textContent = text;
  return node;
}

function fmt(value, lang) {
  const n = Number(value);
  if (!Number.isFinite(n)) return "—";
  const digits = Math.abs(n) >= 100 ? 0 : Math.abs(n) >= 1 ? 1 : 2;
  return n.toLocaleString(lang === "zh" ? "zh-CN" : "en-US", { maximumFractionDigits: digits });
}

function figure(title, svg, summary) {
  const fig = document.createElement("figure");
  fig.className = "chart";
  const cap = document.createElement("figcaption");
  cap.textContent = title;
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `${title}: ${summary}`);
  svg.prepend(s("title", {}, `${title}: ${summary}`));
  fig.append(cap, svg);
  return fig;
}

function legend(items) {
  const ul = document.createElement("ul");
  ul.className = "legend";
  for (const [cls, label] of items) {
    const li = document.createElement("li");
    const sw = document.createElement("span");
    sw.className = `swatch ${cls}`;
    sw.setAttribute("aria-hidden", "true");
    li.append(sw, label);
    ul.append(li);
  }
  return ul;
}

// fit_training / fit_inference: one stacked bar of the per-GPU breakdown, a line at the usable memory
function memory(out, T, lang) {
  const parts = Object.entries(out.breakdown_gb || {}).filter(([, v]) => Number(v) > 0);
  const total = Number(out.per_gpu_gb);
  const usable = Number(out.usable_gb);
  const capacity = Number(out.capacity_gb);
  if (!parts.length || !Number.isFinite(usable)) return null;
  const W = 320, H = 92, x0 = 8, x1 = W - 8;
  const max = Math.max(total || 0, capacity || 0, usable) * 1.04;
  const scale = (v) => x0 + ((x1 - x0) * v) / max;
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart-memory" });
  let acc = 0;
  parts.forEach(([name, v], i) => {
    const a = scale(acc), b = scale(acc + Number(v));
    const rect = s("rect", { x: a, y: 28, width: Math.max(0.5, b - a), height: 26, class: `seg seg-${i % 8}` });
    rect.append(s("title", {}, `${T.chart.parts[name] || name}: ${fmt(v, lang)} GB`));
    svg.append(rect);
    acc += Number(v);
  });
  const ux = scale(usable);
  svg.append(s("line", { x1: ux, x2: ux, y1: 16, y2: 64, class: out.fits ? "limit ok" : "limit over" }));
  const anchor = ux > W / 2 ? "end" : "start";
  svg.append(s("text", { x: ux + (anchor === "end" ? -4 : 4), y: 14, "text-anchor": anchor, class: "label" },
    `${T.chart.usable} ${fmt(usable, lang)} GB`));
  svg.append(s("text", { x: x1, y: 80, "text-anchor": "end", class: "label strong" },
    `${T.chart.total} ${fmt(total, lang)} GB`));
  const gpu = out.gpu ? `${out.gpu}${out.n_gpus > 1 ? ` ×${out.n_gpus}` : ""}` : "";
  const summary = `${gpu} ${T.chart.total} ${fmt(total, lang)} GB / ${T.chart.usable} ${fmt(usable, lang)} GB; ` +
    parts.map(([k, v]) => `${T.chart.parts[k] || k} ${fmt(v, lang)} GB`).join(", ");
  const fig = figure(`${T.chart.memory}${gpu ? " — " + gpu : ""}`, svg, summary);
  fig.append(legend(parts.map(([k, v], i) => [`seg-${i % 8}`, `${T.chart.parts[k] || k} ${fmt(v, lang)} GB`])));
  return fig;
}

// a round axis step (1, 2, 2.5 or 5 times a power of ten) at least `raw`
function niceStep(raw) {
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 2.5, 5, 10].map((m) => m * power).find((v) => v >= raw);
}

// rent_vs_buy: the two cumulative cost curves and the break-even month
function rentVsBuy(out, T, lang) {
  const pts = out.cumulative || [];
  if (pts.length < 2) return null;
  const W = 320, H = 190, L = 44, R = 10, Tp = 12, B = 30;
  const top = Math.max(...pts.map((p) => Math.max(p.rent_cny, p.own_cny))) || 1;
  const stepY = niceStep(top / 4);
  const ticks = Math.ceil(top / stepY);
  const maxY = stepY * ticks;
  const maxX = pts[pts.length - 1].month || 1;
  const X = (m) => L + ((W - L - R) * m) / maxX;
  const Y = (v) => H - B - ((H - B - Tp) * v) / maxY;
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart-rent" });
  for (let k = 0; k <= ticks; k++) {
    const v = stepY * k;
    svg.append(s("line", { x1: L, x2: W - R, y1: Y(v), y2: Y(v), class: "grid" }));
    svg.append(s("text", { x: L - 4, y: Y(v) + 3, "text-anchor": "end", class: "tick" }, fmt(v / 1e4, lang)));
  }
  const step = maxX > 24 ? 12 : maxX > 12 ? 6 : maxX > 6 ? 3 : 1;
  for (let m = 0; m <= maxX; m += step) {
    svg.append(s("text", { x: X(m), y: H - B + 14, "text-anchor": "middle", class: "tick" }, String(m)));
  }
  svg.append(s("text", { x: W - R, y: H - 3, "text-anchor": "end", class: "tick" }, T.chart.month));
  const path = (key) => pts.map((p, i) => `${i ? "L" : "M"}${X(p.month).toFixed(1)},${Y(p[key]).toFixed(1)}`).join("");
  svg.append(s("path", { d: path("rent_cny"), class: "curve rent" }));
  svg.append(s("path", { d: path("own_cny"), class: "curve own" }));
  const be = out.breakeven_months == null ? NaN : Number(out.breakeven_months); // null: owning never pays back
  if (Number.isFinite(be) && be > 0 && be <= maxX) {
    svg.append(s("line", { x1: X(be), x2: X(be), y1: Tp, y2: H - B, class: "breakeven" }));
    svg.append(s("text", { x: X(be) + 4, y: Tp + 10, class: "label strong" },
      `${T.chart.breakeven} ${fmt(be, lang)} ${T.chart.month}`));
  } else if (!Number.isFinite(be)) {
    svg.append(s("text", { x: L + 4, y: Tp + 10, class: "label strong" }, T.chart.noBreakeven));
  }
  const last = pts[pts.length - 1];
  const summary = `${T.chart.rent} ${fmt(last.rent_cny / 1e4, lang)} ${T.chart.money}, ${T.chart.own} ` +
    `${fmt(last.own_cny / 1e4, lang)} ${T.chart.money} @ ${maxX} ${T.chart.month}` +
    (Number.isFinite(be) ? `; ${T.chart.breakeven} ${fmt(be, lang)} ${T.chart.month}` : `; ${T.chart.noBreakeven}`);
  const fig = figure(`${T.chart.costs}${out.gpu ? " — " + out.gpu + " ×" + out.n_gpus : ""}`, svg, summary);
  fig.append(legend([["rent", T.chart.rent], ["own", T.chart.own]]));
  return fig;
}

// compare_gpus: one row of bars per figure (memory, bandwidth, BF16), each bar labelled with its value
function compare(out, T, lang) {
  const rows = (out.rows || []).slice(0, 6);
  if (rows.length < 2) return null;
  const metrics = Object.keys(T.chart.metrics).filter((k) => rows.some((r) => Number(r[k]) > 0));
  const W = 320, rowH = 16, gap = 14, L = 4;
  const H = metrics.length * (rows.length * rowH + gap + 14);
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart-compare" });
  let y = 0;
  const said = [];
  for (const key of metrics) {
    svg.append(s("text", { x: L, y: y + 11, class: "label strong" }, T.chart.metrics[key]));
    y += 14;
    const max = Math.max(...rows.map((r) => Number(r[key]) || 0)) || 1;
    rows.forEach((r, i) => {
      const v = Number(r[key]) || 0;
      const w = ((W - BAR_X - 40) * v) / max;
      const label = s("text", { x: L, y: y + 11, class: "tick" }, shortName(r.name));
      label.append(s("title", {}, r.name)); // the full name on hover
      svg.append(label);
      svg.append(s("rect", { x: BAR_X, y: y + 2, width: Math.max(0.5, w), height: rowH - 5, class: `seg seg-${i % 8}` }));
      svg.append(s("text", { x: BAR_X + 4 + w, y: y + 11, class: "tick" }, v ? fmt(v, lang) : "—"));
      said.push(`${r.name} ${T.chart.metrics[key]} ${v ? fmt(v, lang) : "—"}`);
      y += rowH;
    });
    y += gap;
  }
  return figure(T.chart.compare, svg, said.join(", "));
}

// bars start after the names' column; a name longer than it holds is cut with "…"
const BAR_X = 112;

function shortName(name) {
  const short = String(name || "").replace(/^(NVIDIA|AMD|Huawei|华为)\s+/i, "").replace(/^(GeForce|Instinct)\s+/i, "");
  return short.length > 17 ? `${short.slice(0, 16).trimEnd()}…` : short;
}

const DRAW = { fit_training: memory, fit_inference: memory, rent_vs_buy: rentVsBuy, compare_gpus: compare };

// charts(trace, T, lang) -> [figure elements], at most one per tool kind (the last call of each)
export function charts(trace, T, lang) {
  const last = new Map();
  for (const call of (trace && trace.tool_calls) || []) if (DRAW[call.tool] && call.output) last.set(call.tool, call);
  const out = [];
  for (const call of last.values()) {
    try {
      const fig = DRAW[call.tool](call.output, T, lang);
      if (fig) {
        fig.dataset.tool = call.tool;
        out.push(fig);
      }
    } catch (err) {
      console.warn("chart skipped", call.tool, err);
    }
  }
  return out;
}
