// The sharding ring (pycm run --sharded): per ring, a bar of the members' shares of the hash
// space, a table of the members (Lease, share and the share it moves to, the keys of its share —
// its controllers' primary objects —, all objects cached, keys in flight, the running drain,
// drains, fences) and the ring's last moves. Each replica's stream
// knows its own member best: of one member's records across sources, the one it reported
// itself, newest, wins. The panel stays hidden while no source has a ring.
import { el, fmtNum, fmtTime, pct } from "../dom.js";

const MOVES_SHOWN = 10;
const percent = (share) => `${(share * 100).toFixed(1)}%`;

// ring name -> { members: {identity: record}, moves: [...], drains, fences }
export function mergeRings(model) {
  const rings = new Map();
  for (const s of [...model.sources.values()].sort((a, b) => a.name.localeCompare(b.name))) {
    for (const [name, ring] of Object.entries(s.snapshot.sharding || {})) {
      if (!rings.has(name)) rings.set(name, { members: {}, moves: new Map(), drains: 0, fences: 0 });
      const merged = rings.get(name);
      for (const [identity, rec] of Object.entries(ring.members || {})) {
        const held = merged.members[identity];
        const better = !held || (rec.reported && !held.reported)
          || (rec.reported === held.reported && (rec.last_ts || 0) > (held.last_ts || 0));
        if (better) merged.members[identity] = rec;
      }
      // A move is one member's report: the same one from two sources is shown once.
      for (const move of ring.moves || []) merged.moves.set(`${move.ts}|${move.member}|${move.kind}`, move);
      // The newest layout a member wrote, by its move's time, of any source that saw one.
      if (ring.layout) {
        const at = Math.max(0, ...(ring.moves || []).filter((m) => m.kind === "layout").map((m) => m.ts));
        if (!merged.layout || at >= merged.layoutTs) Object.assign(merged, { layout: ring.layout, layoutTs: at });
      }
    }
  }
  for (const ring of rings.values()) {
    const members = Object.values(ring.members);
    ring.drains = members.reduce((n, m) => n + (m.drains || 0), 0);
    ring.fences = members.reduce((n, m) => n + (m.fences || 0), 0);
    ring.moves = [...ring.moves.values()].sort((a, b) => a.ts - b.ts);
  }
  return rings;
}

function leaseState(m) {
  if (m.left) return ["left", "muted"];
  if (m.fenced) return ["fenced", "bad"];
  if (!m.reported) return [m.lease_live ? "seen live" : "seen gone", "muted"];
  return m.lease_live ? ["live", "ok"] : ["expired", "bad"];
}

export class RingPanel {
  constructor(root) {
    this.root = root;
    this.body = root.querySelector("#ring-body");
  }

  render(model, nowNs) {
    const rings = mergeRings(model);
    this.root.hidden = rings.size === 0;
    if (!rings.size) return;
    const parts = [];
    for (const [name, ring] of [...rings.entries()].sort((a, b) => a[0].localeCompare(b[0]))) {
      const members = Object.entries(ring.members).sort((a, b) => a[0].localeCompare(b[0]));
      const live = members.filter(([, m]) => m.lease_live).length;
      parts.push(el("h3", { class: "ring-name", "data-ring": name },
        `ring ${name}: ${live} live of ${members.length} members · drains ${ring.drains} · fences ${ring.fences}`
        + (ring.layout ? ` · layout ${ring.layout}` : "")));
      const bar = el("div", { class: "share-bar", "data-ring": name });
      let left = 0;
      for (const [identity, m] of members) {
        if (!m.reported || m.left || !m.share) continue;
        const seg = el("div", {
          class: `share${m.fenced ? " fenced" : ""}${m.draining ? " draining" : ""}`,
          "data-member": identity, title: `${identity}: ${percent(m.share)}`,
        }, el("span", { text: identity }));
        seg.style.left = pct(left * 100);
        seg.style.width = pct(m.share * 100);
        left += m.share;
        bar.append(seg);
      }
      parts.push(bar);
      const rows = members.map(([identity, m]) => {
        const [lease, cls] = leaseState(m);
        const moving = m.target && m.target !== m.view && m.target_share !== m.share;
        const drain = m.draining
          ? `${m.drain_keys} key(s), ${fmtNum((nowNs - m.drain_started_ts) / 1e9)} s`
          : "–";
        return el("tr", { "data-member": identity },
          el("td", { text: identity }),
          el("td", { class: cls, text: lease }),
          el("td", { class: "num", text: m.reported ? percent(m.share) : "–" }),
          el("td", { class: "num", text: moving ? percent(m.target_share) : "" }),
          el("td", { class: "num", text: m.relists ? fmtNum(m.keys || 0, 0) : "–" }),
          el("td", { class: "num", text: m.relists ? fmtNum(m.objects, 0) : "–" }),
          el("td", { class: "num", text: fmtNum(m.keys_in_flight || 0, 0) }),
          el("td", { class: m.draining ? "bad" : "", text: drain }),
          el("td", { class: "num", text: fmtNum(m.drains || 0, 0) }),
          el("td", { class: "num", text: m.drains ? fmtNum(m.last_drain_ms) : "–" }),
          el("td", { class: `num${m.fences ? " bad" : ""}`, text: fmtNum(m.fences || 0, 0) }));
      });
      parts.push(el("table", { class: "table ring-members", "data-ring": name },
        el("thead", {}, el("tr", {}, ...["member", "lease", "share", "→ target", "keys",
          "objects", "in flight", "drain", "drains", "last drain ms", "fences"].map((h) => el("th", { text: h })))),
        el("tbody", {}, ...rows)));
      const moves = ring.moves.slice(-MOVES_SHOWN).map((m) =>
        el("li", { class: `move ${m.kind}`, text: `${fmtTime(m.ts)} ${m.text}` }));
      parts.push(el("ol", { class: "changes ring-moves", "data-ring": name }, ...moves));
    }
    this.body.replaceChildren(...parts);
  }
}
