// POST a question to /v1/ask/stream and hand each server-sent event to `onEvent(name, data)`.
// fetch + a stream reader (EventSource cannot POST or send a key); `signal` stops it (AbortController).

export class HttpError extends Error {
  constructor(status, message, retryAfter) {
    super(message);
    this.status = status;
    this.retryAfter = retryAfter;
  }
}

export async function askStream({ base, key, body, lang, signal, onOpen, onEvent }) {
  const headers = { "Content-Type": "application/json", Accept: "text/event-stream", "Accept-Language": lang };
  if (key) headers.Authorization = `Bearer ${key}`;
  const res = await fetch(new URL("v1/ask/stream", base), {
    method: "POST", headers, body: JSON.stringify(body), signal, credentials: "omit", cache: "no-store",
  });
  if (!res.ok || !res.body) {
    let message = `HTTP ${res.status}`;
    try {
      const data = await res.json();
      message = (data.error && data.error.message) || message;
    } catch { /* not JSON */ }
    throw new HttpError(res.status, message, res.headers.get("Retry-After"));
  }
  onOpen && onOpen(res.headers.get("X-Conversation-ID"));
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let cut;
    while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
      let name = "message";
      const data = [];
      for (const line of block.split(/\r?\n/)) {
        if (!line || line.startsWith(":")) continue; // keep-alive comments
        const at = line.indexOf(":");
        const field = at < 0 ? line : line.slice(0, at);
        const val = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
        if (field === "event") name = val;
        else if (field === "data") data.push(val);
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    }
  }
}

export async function sendFeedback({ base, key, lang, body }) {
  const headers = { "Content-Type": "application/json", "Accept-Language": lang };
  if (key) headers.Authorization = `Bearer ${key}`;
  const res = await fetch(new URL("v1/feedback", base), {
    method: "POST", headers, body: JSON.stringify(body), credentials: "omit",
  });
  if (!res.ok) {
    let message = `HTTP ${res.status}`;
    try {
      message = (await res.json()).error.message || message;
    } catch { /* not JSON */ }
    throw new HttpError(res.status, message);
  }
  return res.json();
}
