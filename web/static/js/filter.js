// The event log's filter: the syntax of `pycm top` (tui/views/events.py event_filter).
// `kind:lease.*` (a prefix with *), `key:ns/name`, `instance:x`; other words must appear in
// the event's JSON. All terms must match.

const KEYED = ["key", "resource", "lease", "controller", "queue"];

export function eventFilter(text) {
  const kinds = [];
  const keys = [];
  const instances = [];
  const words = [];
  for (const term of text.split(/\s+/).filter(Boolean)) {
    const i = term.indexOf(":");
    const name = i > 0 ? term.slice(0, i) : "";
    const value = i > 0 ? term.slice(i + 1) : "";
    if (name === "kind") kinds.push(value);
    else if (name === "key") keys.push(value.toLowerCase());
    else if (name === "instance") instances.push(value.toLowerCase());
    else words.push(term.toLowerCase());
  }
  if (!kinds.length && !keys.length && !instances.length && !words.length) return () => true;
  return (entry) => {
    const ev = entry.ev;
    const kind = ev.kind || "";
    for (const k of kinds) {
      if (!(k.endsWith("*") ? kind.startsWith(k.slice(0, -1)) : kind === k)) return false;
    }
    for (const k of keys) {
      if (!KEYED.some((f) => String(ev[f] ?? "").toLowerCase().includes(k))) return false;
    }
    for (const inst of instances) {
      if (!String(ev.instance ?? "").toLowerCase().includes(inst)) return false;
    }
    if (words.length) {
      if (entry.text === null) entry.text = JSON.stringify(ev).toLowerCase();
      return words.every((w) => entry.text.includes(w));
    }
    return true;
  };
}
