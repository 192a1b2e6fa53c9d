// Lease timeline: one swimlane per replica over the window, the holder's time as bars, each
// holder change marked, each failed renew marked with its reason; renew latency against the
// renew-deadline line; a flap alert when changes in the window pass a threshold. With
// coordinated leader election: the coordinator's strategy and preferred holder, and the
// candidates with their versions, oldest emulation version (the coordinator's pick) first.
import { LineChart } from "../charts.js";
import { el, fmtClock, fmtNum, pct } from "../dom.js";
import { leaseTimings } from "../timings.js";

export const FLAP_THRESHOLD = 3; // holder changes within the window

// Every source observes the same lease: merge their histories, one entry per change.
export function leaseHistory(model) {
  const byKey = new Map();
  const renews = [];
  let name = "";
  for (const s of model.sources.values()) {
    for (const lease of Object.values(s.snapshot.leases || {})) {
      name = name || lease.name || "";
      for (const h of lease.history || []) {
        // Observers see one change at (nearly) the same time: key on the new holder and the
        // second it happened in.
        const key = `${h.new}@${Math.round(h.ts / 1e9)}`;
        if (!byKey.has(key)) byKey.set(key, h);
      }
      for (const r of lease.renew_history || []) renews.push({ ...r, source: s.name });
    }
  }
  // Observers record one change at slightly different times: a change to the holder that
  // already holds is the same change seen again.
  const changes = [];
  for (const h of [...byKey.values()].sort((a, b) => a.ts - b.ts)) {
    if (!changes.length || changes[changes.length - 1].new !== h.new) changes.push(h);
  }
  const seen = new Set();
  const uniqueRenews = renews
    .sort((a, b) => a.ts - b.ts)
    .filter((r) => {
      const k = `${r.holder}@${r.ts}`;
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    });
  return { name, changes, renews: uniqueRenews };
}

// "1.35.0" → [1, 35, 0] (a pre-release sorts with its release: enough to order the table).
function versionKey(v) {
  return String(v || "").split("-")[0].split(".").map((p) => Number(p) || 0);
}

function compareVersions(a, b) {
  const x = versionKey(a), y = versionKey(b);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] || 0) - (y[i] || 0);
    if (d) return d;
  }
  return 0;
}

// Every source's view of the candidates, merged (the latest renewal of each wins); the
// preferred holder is one some source saw that is not already the holder (a source that has
// not seen the hand-over yet still names it).
export function leaseCoordination(model, holder) {
  const candidates = new Map();
  let strategy = "";
  let preferred = "";
  for (const s of model.sources.values()) {
    for (const lease of Object.values(s.snapshot.leases || {})) {
      for (const [id, c] of Object.entries(lease.candidates || {})) {
        const seen = candidates.get(id);
        if (!seen || (c.last_renew_ts || 0) > (seen.last_renew_ts || 0)) candidates.set(id, c);
      }
      strategy = strategy || lease.strategy || "";
      if (lease.preferred_holder && lease.preferred_holder !== holder) preferred = lease.preferred_holder;
    }
  }
  const rows = [...candidates.entries()].sort(
    (a, b) => compareVersions(a[1].emulation_version, b[1].emulation_version) || a[0].localeCompare(b[0]),
  );
  return { strategy, preferred, candidates: rows };
}

export function axis(startNs, endNs) {
  const host = el("div", { class: "axis" });
  for (let i = 0; i <= 4; i++) {
    const t = startNs + ((endNs - startNs) * i) / 4;
    const label = el("span", { class: i === 0 ? "first" : i === 4 ? "last" : "", text: fmtClock(t) });
    if (i === 4) label.style.right = "0";
    else label.style.left = pct(i * 25);
    host.append(label);
  }
  return host;
}

export class LeasePanel {
  constructor(root) {
    this.lanes = root.querySelector("#lease-lanes");
    this.list = root.querySelector("#lease-changes");
    this.alert = root.querySelector("#flap-alert");
    this.name = root.querySelector("#lease-name");
    this.chart = new LineChart(root.querySelector("#renew-chart"), { unit: "renew ms (log)", log: true });
    this.coordination = root.querySelector("#lease-coordination");
    this.candidates = root.querySelector("#lease-candidates");
  }

  renderCoordination(model, holder) {
    const { strategy, preferred, candidates } = leaseCoordination(model, holder);
    const coordinated = Boolean(strategy || preferred || candidates.length);
    this.coordination.hidden = !coordinated;
    this.candidates.hidden = !candidates.length;
    if (!coordinated) return;
    this.coordination.textContent =
      `coordinated (${strategy || "no strategy"})` +
      (preferred ? ` — preferred holder ${preferred}: ${holder || "the holder"} is stepping down` : "");
    const rows = candidates.map(([id, c]) => {
      const role = id === preferred ? "preferred" : id === holder ? "holder" : "";
      return el(
        "tr",
        { "data-candidate": id, class: role },
        el("td", { text: id }),
        el("td", { text: c.emulation_version || "" }),
        el("td", { text: c.binary_version || "" }),
        el("td", { text: String(c.renews || 0) }),
        el("td", { text: String(c.pings || 0) }),
        el("td", { text: role }),
      );
    });
    this.candidates.querySelector("tbody").replaceChildren(...rows);
  }

  render(model, nowNs, windowNs) {
    const start = nowNs - windowNs;
    const x = (ts) => pct(((ts - start) / windowNs) * 100);
    const { name, changes, renews } = leaseHistory(model);
    this.name.textContent = name;
    // One lane per replica identity (a source is named by its URL in fan-in; its snapshot
    // names the instance).
    const replicas = new Set();
    for (const s of model.sources.values()) {
      const names = Object.keys(s.snapshot.instances || {}).filter(Boolean);
      if (names.length) names.forEach((i) => replicas.add(i));
      else replicas.add(s.name);
    }
    for (const c of changes) if (c.new) replicas.add(c.new);
    const lanes = [];
    for (const replica of [...replicas].sort()) {
      const lane = el("div", { class: "lane", "data-replica": replica }, el("span", { class: "label", text: replica }));
      // Bars: from each change to this replica until the next change.
      for (let i = 0; i < changes.length; i++) {
        if (changes[i].new !== replica) continue;
        const from = Math.max(changes[i].ts, start);
        const to = i + 1 < changes.length ? changes[i + 1].ts : nowNs;
        if (to < start) continue;
        const seg = el("div", { class: "seg", title: `${replica} holds ${name} from ${fmtClock(changes[i].ts)}` });
        seg.style.left = x(from);
        seg.style.width = pct(((to - from) / windowNs) * 100);
        lane.append(seg);
      }
      for (const c of changes) {
        if (c.new !== replica || c.ts < start) continue;
        const tick = el("div", { class: "tick takeover", title: `${fmtClock(c.ts)} ${c.old || "(none)"} → ${c.new}` });
        tick.style.left = x(c.ts);
        lane.append(tick);
      }
      for (const r of renews) {
        if (r.ok || r.holder !== replica || r.ts < start) continue;
        const fail = el("div", { class: "fail", title: `${fmtClock(r.ts)} renew failed: ${r.reason} (${fmtNum(r.latency_ms)} ms)` });
        fail.style.left = x(r.ts);
        lane.append(fail);
      }
      lanes.push(lane);
    }
    lanes.push(axis(start, nowNs));
    this.lanes.replaceChildren(...lanes);

    // The list below says in words what the lanes show: changes and failed renews, newest last.
    const items = [];
    const recent = [
      ...changes.filter((c) => c.ts >= start).map((c) => ({ ts: c.ts, change: c })),
      ...renews.filter((r) => !r.ok && r.ts >= start).map((r) => ({ ts: r.ts, fail: r })),
    ].sort((a, b) => a.ts - b.ts);
    for (const item of recent.slice(-30)) {
      if (item.change) {
        const c = item.change;
        items.push(el("li", { class: "change", "data-new": c.new, text: `${fmtClock(c.ts)}  ${c.old || "(none)"} → ${c.new}` }));
      } else {
        const r = item.fail;
        items.push(el("li", { class: "failed", text: `${fmtClock(r.ts)}  ${r.holder} renew failed: ${r.reason}` }));
      }
    }
    this.list.replaceChildren(...items);
    this.list.scrollTop = this.list.scrollHeight;
    this.renderCoordination(model, changes.length ? changes[changes.length - 1].new : "");

    const inWindow = changes.filter((c) => c.ts >= start && c.old).length;
    this.alert.hidden = inWindow < FLAP_THRESHOLD;
    this.alert.textContent = `Flapping: ${inWindow} holder changes in the last ${Math.round(windowNs / 6e10)} min`;

    // Renew latency per holder against the renew deadline.
    const holders = [...new Set(renews.map((r) => r.holder))].sort();
    const points = renews.filter((r) => r.ts >= start);
    const xs = points.map((r) => r.ts / 1e9);
    const lines = holders.map((h) => ({ label: h, values: points.map((r) => (r.holder === h ? Math.max(0.01, r.latency_ms || 0) : null)) }));
    if (xs.length) {
      const { deadline: seconds, deadlineAssumed } = leaseTimings(model, name);
      const label = deadlineAssumed ? "renew deadline (kube default*)" : "renew deadline";
      const deadline = [{ label, value: seconds * 1000 }];
      this.chart.update(xs, lines, deadline, [start / 1e9, nowNs / 1e9]);
    }
  }
}
