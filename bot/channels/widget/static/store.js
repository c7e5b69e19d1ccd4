// The conversation kept in localStorage, one per site (the host page's origin) and key, across reloads.
// Only what the view needs is kept: questions, answers, the chart inputs, citations, follow-ups.

const MAX_TURNS = 40;
const CHART_TOOLS = new Set(["fit_training", "fit_inference", "rent_vs_buy", "compare_gpus"]);

export function storageKey(parent, key) {
  return `gpu-advisor:v1:${parent || location.origin}:${(key || "open").slice(0, 12)}`;
}

export function load(name) {
  try {
    const data = JSON.parse(localStorage.getItem(name) || "null");
    if (data && Array.isArray(data.turns)) {
      // an answer still streaming when the page was left did not finish here: show it as stopped (retry)
      for (const turn of data.turns) if (turn.status === "pending") turn.status = "stopped";
      return data;
    }
  } catch { /* storage off or damaged: start fresh */ }
  return { conversationId: null, sent: 0, turns: [] };
}

export function slim(trace) {
  if (!trace) return null;
  return {
    answer: trace.answer,
    language: trace.language,
    conversation_id: trace.conversation_id,
    follow_ups: trace.follow_ups || [],
    citations: (trace.citations || []).map((c) => ({ id: c.id, title: c.title, source: c.source })),
    tool_calls: (trace.tool_calls || []).filter((c) => CHART_TOOLS.has(c.tool)).map((c) => {
      const { assumptions, suggestions, flip, ...rest } = c.output || {};
      const output = c.tool === "compare_gpus"
        ? { rows: (rest.rows || []).map(({ assumptions: _a, sources: _s, ...r }) => r) } : rest;
      return { tool: c.tool, output };
    }),
  };
}

export function save(name, state) {
  const data = { ...state, turns: state.turns.slice(-MAX_TURNS) };
  for (let keep = data.turns.length; keep >= 0; keep -= 5) {
    try {
      localStorage.setItem(name, JSON.stringify({ ...data, turns: data.turns.slice(data.turns.length - keep) }));
      return;
    } catch { /* quota: keep fewer turns */ }
  }
}

export function clear(name) {
  try { localStorage.removeItem(name); } catch { /* storage off */ }
}
