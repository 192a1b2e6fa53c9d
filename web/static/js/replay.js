// Replay controls (``pycm dashboard --replay``): POST api/replay with play, pause, seek (± s)
// and speed; the position comes back as ``replay`` messages.
import { el, fmtClock } from "./dom.js";

export async function sendReplay(action, value = 0) {
  const response = await fetch("api/replay", {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ action, value }),
  });
  if (!response.ok && response.status !== 404) console.warn(`pycm: replay ${action}: ${response.status}`);
}

export class ReplayBar {
  constructor(root) {
    this.root = root;
    this.play = root.querySelector("#replay-play");
    this.position = root.querySelector("#replay-position");
    this.speed = root.querySelector("#replay-speed");
    this.playing = false;
    this.play.addEventListener("click", () => this.toggle());
    root.querySelector("#replay-back").addEventListener("click", () => sendReplay("seek", -10));
    root.querySelector("#replay-forward").addEventListener("click", () => sendReplay("seek", 10));
    this.speed.addEventListener("change", () => sendReplay("speed", Number(this.speed.value)));
  }

  toggle() {
    return sendReplay(this.playing ? "pause" : "play");
  }

  render(model) {
    const replay = model.mode === "replay" ? model.replay : null;
    this.root.hidden = !replay;
    if (!replay) return;
    this.playing = Boolean(replay.playing);
    // An empty recording (a manager stopped before its first event) has nothing to play:
    // say so rather than show a position at 100%.
    this.play.disabled = replay.events === 0;
    if (replay.events === 0) {
      this.play.textContent = "Play";
      this.position.textContent = "no events in this recording";
      return;
    }
    this.play.textContent = this.playing ? "Pause" : "Play";
    this.play.setAttribute("aria-pressed", String(this.playing));
    const done = replay.end_ts > replay.start_ts
      ? Math.round(((replay.position_ts - replay.start_ts) / (replay.end_ts - replay.start_ts)) * 100)
      : 100;
    this.position.textContent = `${fmtClock(replay.position_ts || replay.start_ts || 0)} · ${done}% · ${replay.speed}×`;
    this.showSpeed(replay.speed);
  }

  // The menu shows the speed the server plays at (--speed, or a choice from another page),
  // with an entry of its own when it is not one of the menu's.
  showSpeed(speed) {
    const value = String(speed);
    if (!speed || this.speed.value === value || document.activeElement === this.speed) return;
    if (![...this.speed.options].some((o) => o.value === value)) {
      this.speed.append(el("option", { value, text: `${value}×` }));
    }
    this.speed.value = value;
  }
}
