// Informers: synced, objects, events/s (from the newest sample), backlog, relists; and the
// start-up waterfall of one replica's steps.
import { el, fmtNum, pct } from "../dom.js";

// The narrowest bar (% of the waterfall's width) its duration is written inside: room for
// "12345 ms" at the panel's narrowest.
const INSIDE_MIN_PCT = 20;

export class InformersPanel {
  constructor(root) {
    this.tbody = root.querySelector("#informers-table tbody");
    this.waterfall = root.querySelector("#waterfall");
    this.select = root.querySelector("#waterfall-select");
    this.chosen = false; // the user picked one: keep it; else follow the leader
    this.select.addEventListener("change", () => { this.chosen = true; });
  }

  render(model, leader) {
    const rows = [];
    const instances = [];
    for (const s of [...model.sources.values()].sort((a, b) => a.name.localeCompare(b.name))) {
      const last = s.series.length ? s.series[s.series.length - 1] : null;
      for (const [instance, informers] of Object.entries(s.snapshot.informers || {})) {
        for (const [resource, rec] of Object.entries(informers)) {
          const sample = (last && last.informers && last.informers[`${instance}/${resource}`]) || {};
          rows.push(el("tr", {},
            el("td", { text: instance }),
            el("td", { text: resource }),
            el("td", { class: rec.synced ? "ok" : "bad", text: rec.synced ? `yes (${fmtNum(rec.sync_duration_ms)} ms)` : "no" }),
            el("td", { class: "num", text: fmtNum(sample.objects ?? rec.objects ?? 0, 0) }),
            el("td", { class: "num", text: fmtNum(sample.events_per_s ?? 0) }),
            el("td", { class: "num", text: fmtNum(rec.pending ?? 0, 0) }),
            el("td", { class: `num${rec.relists ? " bad" : ""}`, text: fmtNum(sample.relists ?? rec.relists ?? 0, 0) })));
        }
      }
      for (const [instance, rec] of Object.entries(s.snapshot.instances || {})) {
        if (Object.keys(rec.steps || {}).length) instances.push({ label: instance, instance, rec });
      }
    }
    this.tbody.replaceChildren(...rows);
    const labels = instances.map((i) => i.label);
    if (labels.join("|") !== [...this.select.options].map((o) => o.value).join("|")) {
      const chosen = this.select.value;
      this.select.replaceChildren(...labels.map((l) => el("option", { value: l, text: l })));
      this.select.value = labels.includes(chosen) ? chosen : labels[0] || "";
    }
    // Default: the leader's start-up (the one that got as far as starting controllers).
    const leaderish = instances.find((i) => i.instance === leader);
    if (!this.chosen && leaderish && this.select.value !== leaderish.label) this.select.value = leaderish.label;
    const chosen = instances.find((i) => i.label === this.select.value);
    this.renderWaterfall(chosen ? chosen.rec.steps : {});
  }

  renderWaterfall(steps) {
    const entries = Object.entries(steps || {}).filter(([, s]) => s.start_ts).sort((a, b) => a[1].start_ts - b[1].start_ts);
    if (!entries.length) {
      this.waterfall.replaceChildren(el("span", { class: "muted", text: "no start-up steps seen" }));
      return;
    }
    const t0 = entries[0][1].start_ts;
    const t1 = Math.max(...entries.map(([, s]) => s.start_ts + (s.dur_ns || 0)), t0 + 1);
    const span = t1 - t0;
    const rows = entries.map(([name, s]) => {
      const bar = el("div", { class: `bar${s.outcome && s.outcome !== "ok" ? " error" : ""}`, title: `${name}: ${fmtNum((s.dur_ns || 0) / 1e6)} ms ${s.outcome || "running"} ${s.error || ""}` });
      bar.style.left = pct(((s.start_ts - t0) / span) * 100);
      bar.style.width = pct(((s.dur_ns || 0) / span) * 100);
      const ms = el("span", { class: "ms", text: `${fmtNum((s.dur_ns || 0) / 1e6)} ms` });
      // The duration after the bar; when the bar reaches the right edge, inside its right end
      // (in the background colour) if the bar is wide enough to hold it, else before the bar —
      // a short step after a long wait (a standby's start-up) had its text drawn on nothing.
      const start = ((s.start_ts - t0) / span) * 100;
      const end = ((s.start_ts + (s.dur_ns || 0) - t0) / span) * 100;
      if (end <= 85) {
        ms.style.left = pct(end + 1);
      } else if (end - start >= INSIDE_MIN_PCT) {
        ms.style.right = pct(100 - end + 1);
        ms.classList.add("inside");
      } else {
        ms.style.right = pct(100 - start + 1);
      }
      return el("div", { class: "step" }, el("span", { class: "label", text: name }), bar, ms);
    });
    this.waterfall.replaceChildren(...rows);
  }
}
