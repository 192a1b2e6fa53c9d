// The object panel ("why did it run?"): opened by the search box (resource/namespace/name, or a
// bare namespace/name the server resolves), by a click on any object key the page shows
// ([data-object], with [data-controller] when the key is a controller's), or by the URL hash
// `#object=deployments/default/web`. It shows the object's chain of causes on a time axis — one
// lane per controller and one for outside writers and the informer, each cause a mark at its
// time, an arrow from cause to effect, the details on hover — the chain as text with each
// reconcile's trace, and the object's recent history. The server builds it (GET api/objects,
// web/objects.py); while open, the panel asks again at most once a frame and only when the
// model has moved on since its last answer (never once per event).
import { el, fmtTime, traceCell } from "../dom.js";

const LANE_H = 26; // px: a lane's height (22) and gap (4) (the .chain-lane CSS)
const MID = 11; // px: a lane's middle
const LABEL_W = 110; // px: the lane labels' column
const PAD = 14; // px: room at either end of the axis for a mark
const SVG = "http://www.w3.org/2000/svg";
export const OUTSIDE = "outside";

function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  return node;
}

// What a hover shows of a link: controller, key, action or verb, RV, changed paths, writer.
function linkTitle(link) {
  const lines = [link.text];
  const add = (label, value) => { if (value) lines.push(`${label}: ${value}`); };
  add("controller", link.controller);
  add("key", link.key);
  add("instance", link.instance);
  add("result", link.result);
  add("action", link.action);
  add("verb", link.verb);
  add("event", link.event);
  add("object", link.resource ? `${link.resource} ${link.object}` : link.object);
  add("rv", link.rv);
  add("paths", link.paths);
  add("writer", link.writer);
  add("error", link.error);
  if (link.dur_ns) lines.push(`took: ${(link.dur_ns / 1e6).toFixed(1)} ms`);
  add("trace", link.trace_id);
  return lines.join("\n");
}

function stepWhat(s) {
  if (s.step === "watch") return s.event;
  if (s.step === "reconcile") return [s.result || "running", s.action].filter(Boolean).join(" ");
  if (s.step === "write") return `${s.verb} ${s.code || "no answer"}`;
  return [s.type, s.reason].filter(Boolean).join(" ");
}

function stepDetail(s) {
  const parts = [];
  if (s.step === "watch" || s.step === "reconcile") {
    if (s.paths) parts.push(s.paths);
    if (s.writer) parts.push(`by ${s.writer}`);
    else if (s.cause_controller) parts.push(`by ${s.cause_controller} ${s.cause_key}'s ${s.verb || "write"}`);
  }
  if (s.step === "reconcile" && s.result) parts.push(`${(s.dur_ns / 1e6).toFixed(1)} ms`);
  if (s.step === "reconcile") parts.push(`waited ${Number(s.wait_ms || 0).toFixed(1)} ms`);
  if (s.merged > 1) parts.push(`${s.merged} merged`);
  if (s.error) parts.push(s.error);
  return parts.join(" · ");
}

export class ObjectPanel {
  constructor(root, form) {
    this.root = root;
    this.form = form;
    this.input = form.querySelector("#object-search");
    this.error = form.querySelector("#object-search-error");
    this.title = root.querySelector("#object-h");
    this.note = root.querySelector("#object-note");
    this.candidates = root.querySelector("#object-candidates");
    this.empty = root.querySelector("#object-empty");
    this.chain = root.querySelector("#object-chain");
    this.causes = root.querySelector("#object-causes");
    this.history = root.querySelector("#object-history tbody");
    this.path = null; // what the panel shows (the resolved reference), null when closed
    this.controller = "";
    this.view = null; // the server's last answer
    this.asked = null; // the model's mark when the last request was sent
    this.busy = false;
    this.jaeger = "";
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.open(this.input.value, "", true);
    });
    this.input.addEventListener("input", () => { this.error.hidden = true; });
    root.querySelector("#object-close").addEventListener("click", () => this.close());
    // Any object key on the page opens it (the panel's own keys too).
    document.addEventListener("click", (e) => {
      const target = e.target instanceof Element ? e.target.closest("[data-object]") : null;
      if (!target || e.defaultPrevented || target.closest("a")) return;
      this.open(target.dataset.object, target.dataset.controller || "", false);
    });
    window.addEventListener("hashchange", () => this.fromHash());
  }

  get isOpen() {
    return this.path !== null;
  }

  fromHash() {
    const hash = window.location.hash;
    if (hash.startsWith("#object=")) {
      const ref = decodeURIComponent(hash.slice("#object=".length));
      if (ref && ref !== this.path) this.open(ref, "", false);
    } else if (this.isOpen) {
      this.close();
    }
  }

  showError(message) {
    this.error.textContent = message;
    this.error.hidden = false;
  }

  // Ask the server about `text`; the panel opens on an answer, bad input is said by the box.
  async open(text, controller, fromSearch) {
    const ref = String(text || "").trim();
    if (!ref) {
      this.showError("type an object: resource/namespace/name or namespace/name, e.g. deployments/default/web");
      return;
    }
    const answer = await this.ask(ref, controller);
    if (!answer) return;
    if (answer.error) {
      this.showError(answer.error);
      if (!fromSearch) this.input.value = ref;
      return;
    }
    this.error.hidden = true;
    if (fromSearch) this.input.blur();
    this.path = answer.path || ref;
    this.controller = controller;
    this.root.hidden = false;
    const hash = `#object=${this.path}`;
    if (window.location.hash !== hash) history.replaceState(null, "", hash);
    this.draw(answer);
  }

  close() {
    this.path = null;
    this.view = null;
    this.root.hidden = true;
    if (window.location.hash.startsWith("#object=")) {
      history.replaceState(null, "", window.location.pathname + window.location.search);
    }
  }

  async ask(ref, controller) {
    const query = new URLSearchParams({ ref });
    if (controller) query.set("controller", controller);
    this.busy = true;
    try {
      const response = await fetch(`api/objects?${query}`, { credentials: "same-origin" });
      if (response.status === 401) {
        window.location.assign("login");
        return null;
      }
      const body = await response.json().catch(() => ({}));
      if (!response.ok) return { error: body.error || `the server answered ${response.status}` };
      return body;
    } catch (err) {
      return { error: `cannot ask the server: ${err}` };
    } finally {
      this.busy = false;
    }
  }

  // Once a frame: ask again if the model moved on since the last question.
  tick(model, jaeger) {
    this.jaeger = jaeger;
    if (!this.isOpen || this.busy) return;
    const mark = `${model.version}:${model.logVersion}:${model.connects}`;
    if (mark === this.asked) return;
    this.asked = mark;
    const path = this.path;
    this.ask(path, this.controller).then((answer) => {
      if (answer && !answer.error && this.path === path) this.draw(answer);
    });
  }

  draw(view) {
    this.view = view;
    const steps = view.steps || [];
    const chain = view.chain || [];
    this.title.textContent = view.path;
    const shown = steps.length ? `${steps.length} steps${view.dropped ? `, ${view.dropped} older dropped` : ""}` : "";
    this.note.textContent = shown;
    const others = view.candidates || [];
    this.candidates.hidden = !others.length;
    this.candidates.replaceChildren(...(others.length ? ["also: ", ...others.flatMap((p, i) =>
      [i ? ", " : "", el("span", { class: "objkey", "data-object": p, text: p })])] : []));
    this.empty.hidden = steps.length > 0;
    this.drawChain(chain);
    this.causes.replaceChildren(...chain.map((link, depth) => {
      const item = el("li", { "data-what": link.what }, el("span", { class: "cause", text: link.text }));
      item.style.marginLeft = `${depth * 12}px`;
      if (link.trace_id) item.append(" ", traceCell(this.jaeger, link.trace_id));
      return item;
    }));
    const rows = [...steps].reverse().map((s) =>
      el("tr", { "data-step": s.step, class: s.error || s.result === "error" ? "bad" : "" },
        el("td", { class: "num", text: fmtTime(s.ts) }),
        el("td", { text: s.instance }),
        el("td", { text: s.step }),
        el("td", { text: s.controller }),
        el("td", { class: "key", title: s.key, text: s.key }),
        el("td", { text: stepWhat(s) }),
        el("td", { class: "num", text: s.rv }),
        el("td", { class: "detail", text: stepDetail(s) }),
        el("td", {}, s.trace_id && s.step === "reconcile" ? traceCell(this.jaeger, s.trace_id) : "")));
    this.history.replaceChildren(...rows);
  }

  // The chain on a time axis: lanes from the root cause down (outside first), marks at their
  // times, an arrow from each cause to its effect.
  drawChain(chain) {
    if (!chain.length) {
      this.chain.replaceChildren();
      return;
    }
    const ordered = [...chain].reverse(); // root cause first
    const lanes = [];
    for (const link of ordered) if (!lanes.includes(link.lane)) lanes.push(link.lane);
    const width = Math.max(320, this.chain.clientWidth || 640);
    let t0 = Math.min(...ordered.map((l) => l.at));
    let t1 = Math.max(...ordered.map((l) => l.at));
    if (t1 - t0 < 1e6) { t0 -= 5e5; t1 += 5e5; } // at least a millisecond across
    const span = t1 - t0;
    const x = (at) => LABEL_W + PAD + ((at - t0) / span) * (width - LABEL_W - 2 * PAD);
    const y = (lane) => lanes.indexOf(lane) * LANE_H + MID;
    const height = lanes.length * LANE_H;
    const rows = lanes.map((lane) =>
      el("div", { class: "chain-lane", "data-lane": lane },
        el("span", { class: "label", title: lane, text: lane === OUTSIDE ? "outside" : lane })));
    const marks = ordered.map((link, i) => {
      const mark = el("a", {
        class: `chain-mark ${link.what}`, "data-what": link.what, "data-lane": link.lane,
        "data-index": String(chain.length - 1 - i), title: linkTitle(link),
        "aria-label": link.text,
      });
      if (link.trace_id && this.jaeger) {
        mark.href = `${this.jaeger.replace(/\/+$/, "")}/trace/${link.trace_id}`;
        mark.target = "_blank";
        mark.rel = "noopener noreferrer";
      }
      mark.style.left = `${x(link.at)}px`;
      mark.style.top = `${y(link.lane) - 7}px`;
      return mark;
    });
    const arrows = svg("svg", { class: "chain-arrows", width, height, "aria-hidden": "true" });
    const defs = svg("defs");
    const head = svg("marker", {
      id: "chain-head", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7,
      orient: "auto-start-reverse",
    });
    head.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "chain-head" }));
    defs.append(head);
    arrows.append(defs);
    for (let i = 0; i + 1 < ordered.length; i++) {
      const from = ordered[i];
      const to = ordered[i + 1];
      arrows.append(svg("line", {
        class: "chain-arrow", x1: x(from.at), y1: y(from.lane), x2: x(to.at),
        y2: y(to.lane) + (y(to.lane) > y(from.lane) ? -7 : y(to.lane) < y(from.lane) ? 7 : 0),
        "marker-end": "url(#chain-head)",
      }));
    }
    const area = el("div", { class: "chain-area" }, ...rows, arrows, ...marks);
    area.style.height = `${height}px`;
    const axisRow = el("div", { class: "chain-axis" },
      el("span", { class: "first", text: fmtTime(t0) }), el("span", { class: "last", text: fmtTime(t1) }));
    axisRow.firstChild.style.left = `${LABEL_W}px`;
    this.chain.replaceChildren(area, axisRow);
  }
}
