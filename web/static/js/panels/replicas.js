// Replicas: one card per source — identity, role, lease health gauge, informers synced, and
// the connection state of its stream as the protocol names it.
import { el, fmtNum, pct } from "../dom.js";
import { ASSUMED_NOTE, leaseTimings } from "../timings.js";

export function leaderOf(model) {
  // The holder the freshest source reports (a stopped replica's picture stops ageing), and
  // the latest renew of that holder any source saw.
  let best = null;
  for (const s of model.sources.values()) {
    for (const lease of Object.values(s.snapshot.leases || {})) {
      const ts = s.snapshot.now_ts || 0;
      if (lease.holder && (!best || ts > best.ts)) {
        best = { name: lease.holder, ts, lease: lease.name, renewTs: 0 };
      }
    }
  }
  if (!best) return null;
  for (const s of model.sources.values()) {
    for (const lease of Object.values(s.snapshot.leases || {})) {
      const holder = (lease.holders || {})[best.name];
      if (lease.name === best.lease && holder) best.renewTs = Math.max(best.renewTs, holder.last_renew_ts || 0);
    }
  }
  return best;
}

// The replica a source is: its own name if an instance has it, else the instance that emitted
// most (events before the identity was known carry an empty instance name).
export function instanceOf(s) {
  const instances = s.snapshot.instances || {};
  if (instances[s.name]) return s.name;
  let best = "";
  for (const [name, inst] of Object.entries(instances)) {
    if (name && (!best || (inst.events || 0) > (instances[best].events || 0))) best = name;
  }
  return best || s.name;
}

export function renderReplicas(model, host, nowNs) {
  const leader = leaderOf(model);
  const timings = leader ? leaseTimings(model, leader.lease) : null;
  const cards = [];
  const ordered = [...model.sources.values()].map((s) => [instanceOf(s), s]).sort((a, b) => a[0].localeCompare(b[0]));
  for (const [identity, s] of ordered) {
    const inst = (s.snapshot.instances || {})[identity] || {};
    const isLeader = leader && leader.name === identity;
    const role = isLeader ? "leader" : inst.role === "leader" ? "was leader" : inst.role || "unknown";
    const informers = Object.values((s.snapshot.informers || {})[identity] || {});
    const synced = informers.filter((i) => i.synced).length;
    // Lease health: time since the holder's last renew (as this source saw it), against the
    // renew deadline (the holder gives up) and the lease duration (others may take over), as
    // the electors run with them (a timing the trace lacks is kube's default, marked *).
    let gauge = el("div", { class: "muted", text: "no lease seen" });
    if (leader) {
      const { duration, deadline, durationAssumed, deadlineAssumed } = timings;
      const since = leader.renewTs ? Math.max(0, (nowNs - leader.renewTs) / 1e9) : null;
      const fill = el("div", { class: "fill" });
      const bar = el("div", { class: "gauge", title: `renew deadline ${deadline}s, lease ${duration}s` }, fill);
      const mark = el("div", { class: "mark" });
      mark.style.left = pct((deadline / duration) * 100);
      bar.append(mark);
      if (since !== null) {
        fill.style.width = pct((since / duration) * 100);
        if (since >= deadline) fill.classList.add(since >= duration ? "bad" : "warn");
      }
      const what = isLeader ? "renewed" : `${leader.name} renewed`;
      gauge = el(
        "div", {},
        bar,
        el("div", { class: "row" },
          el("span", { class: "lease-since", text: since === null ? "no renew seen" : `${what} ${fmtNum(since)}s ago` })),
        el("div", { class: "row muted" }, el("span", {
          class: "lease-timings",
          text: `renew deadline ${deadline}s${deadlineAssumed ? "*" : ""} · lease ${fmtNum(duration)}s${durationAssumed ? "*" : ""}`,
        })),
      );
      if (durationAssumed || deadlineAssumed) {
        gauge.append(el("div", { class: "row muted" }, el("span", { class: "lease-assumed", text: ASSUMED_NOTE })));
      }
    }
    const state = (s.status && s.status.state) || "connecting";
    cards.push(
      el("article", { class: `card${isLeader ? " leader" : ""}`, "data-source": s.name, "data-identity": identity, "data-role": role },
        el("div", { class: "row" },
          el("span", { class: "name", title: s.name, text: identity }),
          el("span", { class: "role", text: role })),
        gauge,
        el("div", { class: "row" },
          el("span", { text: `informers ${synced}/${informers.length} synced` }),
          el("span", { class: `badge state-${state} source-state`, "data-state": state, title: s.status.reason || "", text: state })),
        s.status && s.status.reason ? el("div", { class: "muted", text: s.status.reason }) : null,
      ),
    );
  }
  host.replaceChildren(...cards);
  return leader;
}
