// Controllers: per replica and controller the latest sample (depth, syncs/s, p50/p99, errors,
// retries); depth and syncs/s over time; the reconcile latency histogram; the slowest and the
// failing keys with their trace ids (links to Jaeger when it is configured). A click on a
// controller's row drills into what its queue holds now (the snapshot's queue contents: keys
// processing, a stuck one marked; backing off with retries, next retry and last error; waiting).
import { LineChart } from "../charts.js";
import { el, fmtNum, jaegerLink, pct } from "../dom.js";

const LOW = 1e-3; // ms: the histogram's first regular bucket (pycm/trace/histogram.py)
const PER_DECADE = 20;

function bucketLow(i) {
  return i === 0 ? 0 : LOW * 10 ** ((i - 1) / PER_DECADE);
}

function list(table) {
  return Array.isArray(table) ? table : Object.values(table || {});
}

const QUEUE_ROWS = 20; // keys listed per section of the drill-down

// A duration in ns, short: 850 ms, 12.5 s, 3 min 5 s.
export function fmtDur(ns) {
  const ms = Math.max(0, ns / 1e6);
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}

function section(label, count, shown) {
  return shown < count ? `${label} (${count}, ${shown} shown)` : `${label} (${count})`;
}

export class ControllersPanel {
  constructor(root) {
    this.tbody = root.querySelector("#controllers-table tbody");
    this.keys = root.querySelector("#keys-table tbody");
    this.histogram = root.querySelector("#latency-histogram");
    this.select = root.querySelector("#histogram-select");
    this.depth = new LineChart(root.querySelector("#depth-chart"), { unit: "items" });
    this.syncs = new LineChart(root.querySelector("#syncs-chart"), { unit: "per s" });
    this.drill = root.querySelector("#queue-drill");
    this.selected = null; // "source|instance/name" of the controller drilled into
    this.last = null; // the last render's model and now, to redraw at once on a click
    this.tbody.addEventListener("click", (e) => {
      const row = e.target.closest("tr[data-controller]");
      if (!row) return;
      const id = `${row.dataset.source}|${row.dataset.controller}`;
      this.selected = this.selected === id ? null : id;
      this.redrawDrill();
    });
    root.querySelector("#queue-drill-close").addEventListener("click", () => {
      this.selected = null;
      this.redrawDrill();
    });
  }

  redrawDrill() {
    for (const row of this.tbody.querySelectorAll("tr[data-controller]")) {
      row.classList.toggle("selected", `${row.dataset.source}|${row.dataset.controller}` === this.selected);
    }
    if (this.last) this.renderQueue(this.last.model, this.last.nowNs);
  }

  renderQueue(model, nowNs) {
    if (!this.selected) {
      this.drill.hidden = true;
      return;
    }
    const bar = this.selected.indexOf("|");
    const source = model.sources.get(this.selected.slice(0, bar));
    const id = this.selected.slice(bar + 1);
    const slash = id.indexOf("/");
    const instance = id.slice(0, slash);
    const name = id.slice(slash + 1);
    const queue = source ? (((source.snapshot.queues || {})[instance] || {})[name] || null) : null;
    const c = (queue && queue.contents) || {};
    const processing = (c.processing || []).slice(0, QUEUE_ROWS);
    const backing = (c.backing_off || []).slice(0, QUEUE_ROWS);
    const waiting = (c.waiting || []).slice(0, QUEUE_ROWS);
    const stuck = c.stuck || {};
    this.drill.hidden = false;
    this.drill.querySelector("#queue-drill-h").textContent = queue
      ? `queue of ${id} now: ${c.processing_count || 0} processing, ${c.backing_off_count || 0} backing off, ${c.waiting_count || 0} waiting`
      : `queue of ${id}: no queue events seen`;
    const none = (cols) => el("tr", {}, el("td", { class: "muted", colspan: cols, text: "none" }));
    const head = (table, text) => { table.querySelector("th").textContent = text; };
    const tProcessing = this.drill.querySelector("#queue-processing");
    head(tProcessing, section("processing", c.processing_count || 0, processing.length));
    tProcessing.tBodies[0].replaceChildren(...(processing.length ? processing.map((p) => {
      const worker = stuck[p.key];
      return el("tr", { class: p.stuck ? "bad" : "", "data-key": p.key },
        el("td", { class: "key", title: p.key, text: p.key, "data-object": p.key, "data-controller": name }),
        el("td", { class: "num", text: `${fmtDur(nowNs - p.since_ts)}${p.stuck ? " STUCK" : ""}` }),
        el("td", { class: "num", text: worker === undefined || worker < 0 ? "–" : String(worker) }));
    }) : [none(3)]));
    const tBacking = this.drill.querySelector("#queue-backing-off");
    head(tBacking, section("backing off", c.backing_off_count || 0, backing.length));
    tBacking.tBodies[0].replaceChildren(...(backing.length ? backing.map((b) => {
      const due = b.due_ts - nowNs;
      return el("tr", { "data-key": b.key },
        el("td", { class: "key", title: b.key, text: b.key, "data-object": b.key, "data-controller": name }),
        el("td", { class: "num", text: String(b.retries) }),
        el("td", { class: "num", title: new Date(b.due_ts / 1e6).toISOString(), text: due > 0 ? `in ${fmtDur(due)}` : "due" }),
        el("td", { class: `error${b.last_error ? " bad" : " muted"}`, text: b.last_error || "–" }));
    }) : [none(4)]));
    const tWaiting = this.drill.querySelector("#queue-waiting");
    head(tWaiting, section("waiting", c.waiting_count || 0, waiting.length));
    tWaiting.tBodies[0].replaceChildren(...(waiting.length ? waiting.map((w) =>
      el("tr", { "data-key": w.key },
        el("td", { class: "key", title: w.key, text: w.key, "data-object": w.key, "data-controller": name }),
        el("td", { class: "num", text: fmtDur(nowNs - w.since_ts) }))) : [none(2)]));
  }

  render(model, nowNs, windowNs, jaeger) {
    const rows = [];
    const records = []; // {label, rec}
    const depthLines = [];
    const syncLines = [];
    let xs = null;
    const start = nowNs - windowNs;
    for (const s of [...model.sources.values()].sort((a, b) => a.name.localeCompare(b.name))) {
      const last = s.series.length ? s.series[s.series.length - 1] : null;
      for (const [instance, ctrls] of Object.entries(s.snapshot.controllers || {})) {
        for (const [name, rec] of Object.entries(ctrls)) {
          const id = `${instance}/${name}`;
          const sample = (last && last.controllers && last.controllers[id]) || {};
          const queue = ((s.snapshot.queues || {})[instance] || {})[name] || {};
          const latency = rec.latency || {};
          const errors = sample.errors ?? rec.errors;
          const picked = this.selected === `${s.name}|${id}`;
          if (rec.disabled) {
            // Not started: said so, rather than zeros that read as an idle controller.
            const why = rec.disabled_reason ? `disabled (${rec.disabled_reason})` : "disabled";
            rows.push(el("tr", { "data-controller": id, "data-source": s.name, class: "disabled" },
              el("td", { text: instance }),
              el("td", { text: name }),
              el("td", { class: "muted", colspan: "6", text: why })));
            continue;
          }
          rows.push(el("tr", { "data-controller": id, "data-source": s.name, class: picked ? "selected" : "" },
            el("td", { text: instance }),
            el("td", { text: name }),
            el("td", { class: "num", text: fmtNum(sample.depth ?? queue.depth ?? 0, 0) }),
            el("td", { class: "num", text: fmtNum(sample.syncs_per_s ?? rec.reconciles_per_s ?? 0) }),
            el("td", { class: "num", text: fmtNum(sample.p50_ms ?? latency.p50) }),
            el("td", { class: "num", text: fmtNum(sample.p99_ms ?? latency.p99) }),
            el("td", { class: `num${errors ? " bad" : ""}`, text: fmtNum(errors ?? 0, 0) }),
            el("td", { class: "num", text: fmtNum(sample.retries ?? queue.retries ?? 0, 0) })));
          records.push({ label: id, rec, source: s.name, id, name });
        }
      }
      // Time series: one x axis (the longest source's samples), others aligned by index from
      // the end — samples are one a second on every source.
      const samples = s.series.filter((p) => p.ts >= start);
      if (!xs || samples.length > xs.length) xs = samples.map((p) => p.ts / 1e9);
      const ids = new Set();
      for (const p of samples) for (const id of Object.keys(p.controllers || {})) ids.add(id);
      for (const id of [...ids].sort()) {
        depthLines.push({ label: id, samples, pick: (p) => (p.controllers[id] || {}).depth ?? null });
        syncLines.push({ label: id, samples, pick: (p) => (p.controllers[id] || {}).syncs_per_s ?? null });
      }
    }
    this.tbody.replaceChildren(...rows);
    if (xs && xs.length) {
      const align = (line) => {
        const values = line.samples.map(line.pick);
        const pad = xs.length - values.length;
        return { label: line.label, values: pad > 0 ? [...new Array(pad).fill(null), ...values] : values.slice(-xs.length) };
      };
      const span = [start / 1e9, nowNs / 1e9];
      this.depth.update(xs, depthLines.map(align), [], span);
      this.syncs.update(xs, syncLines.map(align), [], span);
    }
    this.renderHistogram(records);
    this.renderKeys(records, jaeger);
    this.last = { model, nowNs };
    this.renderQueue(model, nowNs);
  }

  renderHistogram(records) {
    const labels = records.map((r) => r.label);
    const current = [...this.select.options].map((o) => o.value);
    if (labels.join("|") !== current.join("|")) {
      const chosen = this.select.value;
      this.select.replaceChildren(...labels.map((l) => el("option", { value: l, text: l })));
      // Default: the controller that reconciled most.
      const busiest = records.reduce((a, b) => (((b.rec.latency || {}).count || 0) > ((a && a.rec.latency || {}).count || 0) ? b : a), null);
      this.select.value = labels.includes(chosen) ? chosen : busiest ? busiest.label : "";
    }
    const record = records.find((r) => r.label === this.select.value);
    const buckets = record ? (record.rec.latency || {}).buckets || [] : [];
    if (!buckets.length) {
      this.histogram.replaceChildren(el("span", { class: "muted", text: "no reconciles yet" }));
      return;
    }
    // At least ~a decade around the samples, so one busy bucket reads as a bar, not a wall.
    const first = Math.max(0, buckets[0][0] - 8);
    const lastIndex = buckets[buckets.length - 1][0] + 8;
    const counts = new Map(buckets.map(([i, n]) => [i, n]));
    const top = Math.max(...buckets.map(([, n]) => n));
    const bars = [];
    for (let i = first; i <= lastIndex; i++) {
      const n = counts.get(i) || 0;
      const bar = el("div", { class: "bar", title: `${fmtNum(bucketLow(i), 3)}–${fmtNum(bucketLow(i + 1), 3)} ms: ${n}` });
      bar.style.height = pct((n / top) * 100);
      bars.push(bar);
    }
    const axisRow = el("div", { class: "histogram-axis" },
      el("span", { text: `${fmtNum(bucketLow(first), 3)} ms` }),
      el("span", { text: `${(record.rec.latency || {}).count || 0} reconciles` }),
      el("span", { text: `${fmtNum(bucketLow(lastIndex + 1), 3)} ms` }));
    this.histogram.replaceChildren(...bars);
    if (this.histogram.nextElementSibling && this.histogram.nextElementSibling.classList.contains("histogram-axis")) {
      this.histogram.nextElementSibling.replaceWith(axisRow);
    } else {
      this.histogram.after(axisRow);
    }
  }

  renderKeys(records, jaeger) {
    const rows = [];
    for (const { rec, id, source, name } of records) {
      const failing = list(rec.failing).map((k) => ({ ...k, failing: true }));
      const slowest = list(rec.slowest).sort((a, b) => (b.dur_ns || 0) - (a.dur_ns || 0)).slice(0, 5);
      for (const k of [...failing.slice(-5), ...slowest]) {
        rows.push(el("tr", { class: k.failing ? "bad" : "" },
          el("td", { title: source, text: id }),
          el("td", { class: "key", title: k.key, text: k.key, "data-object": k.key, "data-controller": name }),
          el("td", { class: "num", text: fmtNum((k.dur_ns || 0) / 1e6) }),
          el("td", { text: k.failing ? `failing ×${k.count || 1}: ${k.error || k.result}` : k.result || k.outcome || "" }),
          el("td", {}, jaegerLink(jaeger, k.trace_id))));
      }
    }
    this.keys.replaceChildren(...rows.slice(0, 20));
  }
}
