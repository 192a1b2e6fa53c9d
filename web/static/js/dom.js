// Tiny DOM helpers: elements are built with textContent only (never innerHTML), so nothing an
// event carries can become markup.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function replaceRows(tbody, rows) {
  tbody.replaceChildren(...rows);
}

export function pct(x) {
  return `${Math.max(0, Math.min(100, x)).toFixed(3)}%`;
}

export function fmtNum(x, digits = 1) {
  if (x === undefined || x === null || Number.isNaN(x)) return "–";
  if (Math.abs(x) >= 100 || Number.isInteger(x)) return String(Math.round(x));
  return x.toFixed(digits);
}

export function fmtTime(ns) {
  const d = new Date(ns / 1e6);
  return d.toISOString().slice(11, 23);
}

export function fmtClock(ns) {
  return new Date(ns / 1e6).toISOString().slice(11, 19);
}

export function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

// A trace id is shown whole: the reconciles of one manager share their trace ids' high half
// (pycm/trace/context.py new_id_key), so any prefix would name them all alike.
export function jaegerLink(base, traceId) {
  if (!traceId) return el("span", { class: "muted", text: "–" });
  if (!base) return el("code", { class: "trace-id", text: traceId });
  return el("a", {
    class: "trace-id", href: `${base.replace(/\/+$/, "")}/trace/${traceId}`, target: "_blank",
    rel: "noopener noreferrer", text: traceId,
  });
}

// A trace id: a Jaeger link when the dashboard has one, else the id as text with a copy button
// (the clipboard API where the page may use it, else the id selected for a ⌃C).
export function traceCell(base, traceId) {
  if (!traceId || base) return jaegerLink(base, traceId);
  const code = el("code", { class: "trace-id", text: traceId });
  const button = el("button", { type: "button", class: "copy", title: "copy the trace id", text: "copy" });
  button.addEventListener("click", (e) => {
    e.preventDefault();
    const select = () => {
      const range = document.createRange();
      range.selectNodeContents(code);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(traceId).then(() => { button.textContent = "copied"; }, select);
    } else {
      select();
    }
  });
  return el("span", { class: "trace" }, code, " ", button);
}
