// The live event log: the newest matching events (bounded), a filter with `pycm top`'s syntax,
// pause/follow. While paused the list stays still; events keep arriving into the model.
import { el, fmtTime } from "../dom.js";
import { eventFilter } from "../filter.js";

export const SHOWN = 300;
const ENVELOPE = new Set(["kind", "v", "seq", "ts", "instance", "trace_id", "span_id", "parent_id", "line"]);

// The event's own attributes, `name=value`, as `pycm top` lists them (the envelope is in the
// columns before). An object's key (a reconcile's, a queue's, an API call's object) is a
// [data-object] span: a click opens the object panel.
function attributes(ev) {
  const parts = [];
  for (const [name, value] of Object.entries(ev)) {
    if (ENVELOPE.has(name) || value === "" || value === null || value === undefined) continue;
    if (name === "dur_ns") {
      if (value) parts.push(`took=${(value / 1e6).toFixed(1)}ms`);
      continue;
    }
    const text = typeof value === "number" && !Number.isInteger(value) ? value.toFixed(2) : String(value);
    const object = objectOf(ev, name, text);
    parts.push(object ? [`${name}=`, el("span", { "data-object": object, "data-controller": ev.controller || ev.queue || "", text })] : `${name}=${text}`);
  }
  const nodes = [];
  parts.forEach((part, i) => {
    if (i) nodes.push(" ");
    if (Array.isArray(part)) nodes.push(...part);
    else nodes.push(part);
  });
  return nodes;
}

function objectOf(ev, name, text) {
  if (name === "key" && text) return text;
  if (name === "name" && ev.resource && ev.kind === "api.request") {
    return ev.namespace ? `${ev.resource}/${ev.namespace}/${text}` : `${ev.resource}/${text}`;
  }
  if (name === "name" && ev.kind === "event.recorded" && ev.namespace) return `${ev.namespace}/${text}`;
  return "";
}

export class LogPanel {
  constructor(root) {
    this.list = root.querySelector("#log-list");
    this.input = root.querySelector("#log-filter");
    this.button = root.querySelector("#log-pause");
    this.count = root.querySelector("#log-count");
    this.accept = eventFilter("");
    this.paused = false;
    this.drawn = -1;
    this.input.addEventListener("input", () => {
      this.accept = eventFilter(this.input.value);
      this.drawn = -1;
    });
    this.button.addEventListener("click", () => this.togglePause());
  }

  togglePause() {
    // Pausing keeps exactly what is on screen; following again redraws at the next frame.
    this.paused = !this.paused;
    this.button.textContent = this.paused ? "Follow (p)" : "Pause (p)";
    this.button.setAttribute("aria-pressed", String(this.paused));
    if (!this.paused) this.drawn = -1;
  }

  render(model) {
    if (this.paused) {
      this.count.textContent = `paused · ${model.logNext} received`;
      return;
    }
    const mark = `${model.logVersion}`;
    if (mark === this.drawn) return;
    this.drawn = mark;
    // Arrival order interleaves sources by batch: list by time instead.
    const entries = model.recent(SHOWN, this.accept).sort((a, b) => (a.ev.ts || 0) - (b.ev.ts || 0));
    const rows = entries.map(({ source, ev }) => {
      const error = ev.error || (ev.outcome && ev.outcome !== "ok");
      return el("li", { class: error ? "error" : "", "data-seq": `${source}:${ev.seq}` },
        el("span", { class: "time", text: `${fmtTime(ev.ts || 0)} ` }),
        el("span", { class: "src", title: source, text: `${ev.instance || source} ` }),
        el("span", { class: "kind", text: `${ev.kind} ` }),
        el("span", { class: "line" }, ...attributes(ev)));
    });
    this.list.replaceChildren(...rows);
    this.list.scrollTop = this.list.scrollHeight; // following: the newest stays in view
    this.count.textContent = `${entries.length} shown · ${model.logNext} received`;
  }
}
