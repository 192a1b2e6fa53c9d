// The live event log: the newest matching events (bounded), a filter with `pycm top`'s syntax,
// pause/follow. While paused the list stays still; events keep arriving into the model.
import { el, fmtTime } from "../dom.js";
import { eventFilter } from "../filter.js";

export const SHOWN = 300;

export class LogPanel {
  constructor(root) {
    this.list = root.querySelector("#log-list");
    this.input = root.querySelector("#log-filter");
    this.button = root.querySelector("#log-pause");
    this.count = root.querySelector("#log-count");
    this.accept = eventFilter("");
    this.paused = false;
    this.drawn = -1;
    this.input.addEventListener("input", () => {
      this.accept = eventFilter(this.input.value);
      this.drawn = -1;
    });
    this.button.addEventListener("click", () => this.togglePause());
  }

  togglePause() {
    this.paused = !this.paused;
    this.button.textContent = this.paused ? "Follow (p)" : "Pause (p)";
    this.button.setAttribute("aria-pressed", String(this.paused));
    this.drawn = -1;
  }

  render(model) {
    if (this.paused && this.drawn !== -1) return;
    const mark = `${model.logVersion}:${this.paused}`;
    if (mark === this.drawn) return;
    this.drawn = mark;
    const entries = model.recent(SHOWN, this.accept);
    const rows = entries.map(({ source, ev }) => {
      const error = ev.error || (ev.outcome && ev.outcome !== "ok");
      return el("li", { class: error ? "error" : "", "data-seq": `${source}:${ev.seq}` },
        el("span", { class: "time", text: `${fmtTime(ev.ts || 0)} ` }),
        el("span", { class: "src", text: `${source} ` }),
        el("span", { class: "kind", text: `${ev.kind} ` }),
        el("span", { class: "line", text: ev.line || "" }));
    });
    const atBottom = this.list.scrollTop + this.list.clientHeight >= this.list.scrollHeight - 4;
    this.list.replaceChildren(...rows);
    if (atBottom || !this.paused) this.list.scrollTop = this.list.scrollHeight;
    this.count.textContent = `${entries.length} shown · ${model.logNext} received${this.paused ? " · paused" : ""}`;
  }
}
