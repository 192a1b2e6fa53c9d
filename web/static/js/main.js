// The page: one EventSource on api/stream feeds the model; panels render from the model on a
// throttled timer (at most ~4 frames a second, and only when something changed), never once
// per event — so the page stays responsive at thousands of events a second.
import { Model } from "./model.js";
import { ControllersPanel } from "./panels/controllers.js";
import { IncidentPanel } from "./panels/incidents.js";
import { InformersPanel } from "./panels/informers.js";
import { LeasePanel } from "./panels/lease.js";
import { LogPanel } from "./panels/log.js";
import { ObjectPanel } from "./panels/object.js";
import { renderReplicas } from "./panels/replicas.js";
import { RingPanel } from "./panels/ring.js";
import { ReplayBar, sendReplay } from "./replay.js";

const FRAME_MS = 250;
const model = new Model();
const $ = (sel) => document.querySelector(sel);
const jaegerMeta = document.querySelector('meta[name="pycm-jaeger-url"]');
const panels = {
  lease: new LeasePanel($("#lease-panel")),
  incidents: new IncidentPanel($("#incident-panel")),
  ring: new RingPanel($("#ring-panel")),
  controllers: new ControllersPanel($("#controllers-panel")),
  informers: new InformersPanel($("#informers-panel")),
  log: new LogPanel($("#log-panel")),
  replay: new ReplayBar($("#replay-bar")),
  object: new ObjectPanel($("#object-panel"), $("#object-search-form")),
};
let frames = 0;
let drawnVersion = -1;
let lastWall = 0;
let pending = false;

// The timelines' span: the chosen window, or less while the sources are younger than it (so a
// fresh start is not squeezed into the right edge of 15 empty minutes).
function windowNs(now) {
  const chosen = Number($("#window-select").value) * 60e9;
  let first = now;
  for (const s of model.sources.values()) {
    for (const inst of Object.values(s.snapshot.instances || {})) {
      if (inst.first_ts) first = Math.min(first, inst.first_ts);
    }
  }
  return Math.max(60e9, Math.min(chosen, (now - first) * 1.05));
}

function setStreamState(state) {
  model.stream = state;
  const badge = $("#stream-state");
  badge.textContent = state;
  badge.dataset.state = state;
  badge.className = `badge state-${state}`;
}

function render() {
  pending = false;
  const now = model.nowNs();
  // The time axes move even when nothing arrives: redraw the timelines once a second.
  const wall = Math.floor(Date.now() / 1000);
  if (model.version !== drawnVersion || wall !== lastWall) {
    drawnVersion = model.version;
    lastWall = wall;
    const leader = renderReplicas(model, $("#replica-cards"), now);
    $("#leader-name").textContent = leader ? leader.name : "—";
    $("#mode").textContent = model.mode;
    panels.replay.render(model);
    const jaeger = model.config.jaeger_url || (jaegerMeta && jaegerMeta.content) || "";
    const span = windowNs(now);
    panels.lease.render(model, now, span);
    panels.incidents.render(model, now, span);
    panels.ring.render(model, now);
    panels.controllers.render(model, now, span, jaeger);
    panels.informers.render(model, leader ? leader.name : "");
  }
  panels.log.render(model);
  panels.object.tick(model, model.config.jaeger_url || (jaegerMeta && jaegerMeta.content) || "");
  frames++;
  document.body.dataset.frames = String(frames);
  $("#frame-info").textContent = model.duplicatesDropped ? `${model.duplicatesDropped} repeats dropped` : "";
}

setInterval(() => {
  if (!pending) {
    pending = true;
    requestAnimationFrame(render);
  }
}, FRAME_MS);

function connect() {
  const source = new EventSource("api/stream");
  const on = (name, fn) =>
    source.addEventListener(name, (e) => {
      try {
        fn(JSON.parse(e.data));
      } catch (err) {
        console.warn(`pycm: bad ${name} message`, err);
      }
    });
  source.onopen = () => setStreamState("connected");
  source.onerror = () => {
    // EventSource reconnects by itself unless the server refused the stream outright.
    if (source.readyState === EventSource.CLOSED) {
      setStreamState("failed");
      // The session may have ended (401): check, and go to the login page if so.
      fetch("api/state", { credentials: "same-origin" }).then((r) => {
        if (r.status === 401) window.location.assign("login");
        else setTimeout(connect, 2000);
      }, () => setTimeout(connect, 2000));
    } else {
      setStreamState("reconnecting");
    }
  };
  on("hello", (m) => model.hello(m));
  on("events", (m) => model.events(m));
  on("snapshot", (m) => model.snapshot(m));
  on("incident", (m) => model.incident(m));
  on("status", (m) => model.status(m));
  on("replay", (m) => model.setReplay(m));
  on("lagged", () => setStreamState("reconnecting")); // the server closes; EventSource retries
}

// Keyboard: `/` filter, `o` object search, `p` pause/follow, `?` help; Esc leaves the filter
// or the search box (and closes the object panel when in neither).
document.addEventListener("keydown", (e) => {
  const typing = e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement;
  if (e.key === "Escape" && typing) {
    e.target.blur();
    return;
  }
  if (e.key === "Escape" && panels.object.isOpen && !$("#help-dialog").open) {
    panels.object.close();
    return;
  }
  if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === "/") {
    e.preventDefault();
    $("#log-filter").focus();
  } else if (e.key === "o") {
    e.preventDefault();
    $("#object-search").focus();
  } else if (e.key === "p") {
    panels.log.togglePause();
  } else if (model.mode === "replay" && e.key === " ") {
    e.preventDefault();
    panels.replay.toggle();
  } else if (model.mode === "replay" && (e.key === "[" || e.key === "]")) {
    sendReplay("seek", e.key === "[" ? -10 : 10);
  } else if (e.key === "?") {
    const dialog = $("#help-dialog");
    if (dialog.open) dialog.close();
    else dialog.showModal();
  }
});
$("#help-button").addEventListener("click", () => $("#help-dialog").showModal());
$("#window-select").addEventListener("change", () => { drawnVersion = -1; });

// For the browser tests and the curious at the console: the model, read-only by convention.
window.pycmDashboard = Object.freeze({ model, panels });

connect();
panels.object.fromHash(); // a shared link: #object=deployments/default/web
