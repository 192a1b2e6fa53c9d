// Incident timeline: one time axis, one row per incident type (lease transitions, relists and
// 410s, dropped watches, error bursts, slow reconciles, stuck workers; and, only when there are
// any, a sharding ring's moves, drains and fenced members); hovering a marker lists the
// incidents at that spot.
import { el, fmtClock, fmtTime, pct } from "../dom.js";
import { axis } from "./lease.js";

export const TYPES = [
  ["lease", "lease transitions"],
  ["relist", "relists"],
  ["expired", "410 Gone"],
  ["watch_dropped", "dropped watches"],
  ["error_burst", "error bursts"],
  ["slow_reconcile", "slow reconciles"],
  ["stuck_worker", "stuck workers"],
  ["shard_move", "ring moves", true],
  ["shard_drain", "drains", true],
  ["shard_fenced", "fenced members", true],
];
// (A third element: the lane is drawn only when it has incidents — a manager that is not
// sharded shows no sharding lanes.)
const BUCKETS = 200; // markers closer than 1/200 of the window share one marker

export class IncidentPanel {
  constructor(root) {
    this.root = root;
    this.lanes = root.querySelector("#incident-lanes");
    this.tip = root.querySelector("#incident-tip");
    this.groups = new Map();
    this.lanes.addEventListener("mouseover", (e) => this.hover(e));
    this.lanes.addEventListener("mouseout", () => { this.tip.hidden = true; });
  }

  render(model, nowNs, windowNs) {
    const start = nowNs - windowNs;
    const groups = new Map(); // "type:bucket" -> incidents
    for (const s of model.sources.values()) {
      for (const inc of s.incidents) {
        if (inc.ts < start) continue;
        const bucket = Math.min(BUCKETS - 1, Math.floor(((inc.ts - start) / windowNs) * BUCKETS));
        const key = `${inc.type}:${bucket}`;
        if (!groups.has(key)) groups.set(key, []);
        groups.get(key).push({ ...inc, source: s.name });
      }
    }
    this.groups = groups;
    const rows = [];
    const present = new Set([...groups.keys()].map((key) => key.slice(0, key.lastIndexOf(":"))));
    for (const [type, label, optional] of TYPES) {
      if (optional && !present.has(type)) continue;
      const lane = el("div", { class: "lane", "data-type": type }, el("span", { class: "label", text: label }));
      for (const [key, incs] of groups) {
        if (!key.startsWith(`${type}:`)) continue;
        const marker = el("div", { class: `marker ${type}`, "data-key": key, "aria-label": `${incs.length} ${label}` });
        marker.style.left = pct(((incs[0].ts - start) / windowNs) * 100);
        lane.append(marker);
      }
      rows.push(lane);
    }
    rows.push(axis(start, nowNs));
    this.lanes.replaceChildren(...rows);
  }

  hover(e) {
    const key = e.target && e.target.dataset ? e.target.dataset.key : undefined;
    const incs = key && this.groups.get(key);
    if (!incs) return;
    const items = incs.slice(-12).map((i) =>
      el("li", { text: `${fmtTime(i.ts)} ${i.source} ${i.instance || ""}: ${i.text}${i.trace_id ? ` (trace ${i.trace_id})` : ""}` }));
    this.tip.replaceChildren(el("strong", { text: `${incs.length} at ${fmtClock(incs[0].ts)}` }), el("ul", {}, ...items));
    const box = this.root.getBoundingClientRect();
    const at = e.target.getBoundingClientRect();
    this.tip.style.left = `${Math.min(at.left - box.left, box.width - 420)}px`;
    this.tip.style.top = `${at.bottom - box.top + 4}px`;
    this.tip.hidden = false;
  }
}
