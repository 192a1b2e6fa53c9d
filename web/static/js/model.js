// The page's picture of every source, fed by the stream's messages. Applying a message only
// stores data and marks the model dirty; panels render from it on the throttled frame timer.

export const LOG_CAPACITY = 2000; // events kept for the log (newest), across sources
const SERIES_CAPACITY = 900; // one sample a second: 15 minutes
const INCIDENT_CAPACITY = 500;

export class Model {
  constructor() {
    this.mode = "live";
    this.config = { jaeger_url: null, kube_defaults: null, slow_reconcile_ms: 1000 }; // hello's
    this.sources = new Map(); // name -> Source
    this.replay = null;
    this.stream = "connecting"; // the EventSource's own state
    this.connects = 0; // hellos received: 1 + the reconnects
    this.log = new Array(LOG_CAPACITY); // ring of log entries
    this.logNext = 0; // index of the next write; total written so far
    this.duplicatesDropped = 0;
    this.version = 0; // bumped on every change; panels compare it with what they drew
    this.logVersion = 0;
  }

  source(name) {
    let s = this.sources.get(name);
    if (!s) {
      s = {
        name, status: { state: "connecting", reason: "" }, snapshot: {}, series: [],
        incidents: [], lastSeq: 0, lastTs: 0, receivedAt: 0,
      };
      this.sources.set(name, s);
    }
    return s;
  }

  // hello: a complete picture; the page resets to it but keeps each source's last seq, so the
  // events that follow a reconnect are not shown twice (live; a replay's log starts over).
  hello(msg) {
    this.connects++;
    this.mode = msg.mode || "live";
    this.config = { ...this.config, ...(msg.config || {}) };
    this.replay = msg.replay || null;
    const seen = new Set();
    for (const src of msg.sources || []) {
      const s = this.source(src.name);
      seen.add(src.name);
      s.status = src.status || s.status;
      s.snapshot = src.snapshot || {};
      s.receivedAt = Date.now();
      s.series = (src.series || []).slice(-SERIES_CAPACITY);
      s.incidents = (src.incidents || []).slice(-INCIDENT_CAPACITY);
      // A source whose numbering is now below what we saw restarted: the new process's
      // events count from its first — the backfill that follows brings those the log has
      // not shown (its start-up), so none of them may pass for a repeat.
      const top = lastSeqOf(s.snapshot);
      if (top > 0 && top < s.lastSeq) {
        s.lastSeq = 0;
        s.lastTs = 0;
      }
    }
    for (const name of [...this.sources.keys()]) if (!seen.has(name)) this.sources.delete(name);
    if (this.mode === "replay") {
      // A replay's hello is the recording as of its position — after a seek back, an earlier
      // one: the log starts over from the backfill that follows, so that nothing later than
      // the position stays in it (nor is the backfill counted as repeats).
      this.log = new Array(LOG_CAPACITY);
      this.logNext = 0;
      this.logVersion++;
      for (const s of this.sources.values()) {
        s.lastSeq = 0;
        s.lastTs = 0;
      }
    }
    this.version++;
  }

  events(msg) {
    const s = this.source(msg.source);
    let added = 0;
    for (const ev of msg.events || []) {
      const seq = ev.seq || 0;
      if (seq <= s.lastSeq) {
        // At or below the last seq: a duplicate after a reconnect — unless the source
        // restarted (a new process numbers from 1 again, with newer timestamps).
        if (!(s.lastTs && ev.ts > s.lastTs && seq < s.lastSeq)) {
          this.duplicatesDropped++;
          continue;
        }
      }
      s.lastSeq = seq;
      s.lastTs = ev.ts || s.lastTs;
      this.log[this.logNext % LOG_CAPACITY] = { source: msg.source, ev, text: null };
      this.logNext++;
      added++;
    }
    if (added) this.logVersion++;
  }

  snapshot(msg) {
    const s = this.source(msg.source);
    s.snapshot = msg.snapshot || s.snapshot;
    s.receivedAt = Date.now();
    if (msg.sample) {
      s.series.push(msg.sample);
      if (s.series.length > SERIES_CAPACITY) s.series.splice(0, s.series.length - SERIES_CAPACITY);
    }
    this.version++;
  }

  incident(msg) {
    const s = this.source(msg.source);
    s.incidents.push(msg.incident);
    if (s.incidents.length > INCIDENT_CAPACITY) s.incidents.shift();
    this.version++;
  }

  status(msg) {
    this.source(msg.source).status = msg.status;
    this.version++;
  }

  setReplay(msg) {
    this.replay = msg;
    this.version++;
  }

  // The newest log entries, oldest first, at most `limit` that `accept`.
  recent(limit, accept) {
    const out = [];
    const first = Math.max(0, this.logNext - LOG_CAPACITY);
    for (let i = this.logNext - 1; i >= first && out.length < limit; i--) {
      const entry = this.log[i % LOG_CAPACITY];
      if (accept(entry)) out.push(entry);
    }
    return out.reverse();
  }

  // "Now" on the sources' clock (ns): the replay position, or the newest snapshot's now_ts
  // moved on by the time since it arrived.
  nowNs() {
    if (this.mode === "replay" && this.replay && this.replay.position_ts) return this.replay.position_ts;
    let now = 0;
    for (const s of this.sources.values()) {
      const t = s.snapshot.now_ts || 0;
      if (t) now = Math.max(now, t + (Date.now() - s.receivedAt) * 1e6);
    }
    return now || Date.now() * 1e6;
  }
}

export function lastSeqOf(snapshot) {
  let top = 0;
  for (const inst of Object.values(snapshot.instances || {})) top = Math.max(top, inst.last_seq || 0);
  return top;
}
