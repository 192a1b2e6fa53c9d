// Line charts over uPlot (vendored). A chart is rebuilt only when its set of series changes;
// otherwise each frame just hands uPlot new data.
import uPlot from "../vendor/uplot/uPlot.esm.js";
import { cssVar } from "./dom.js";

const PALETTE = ["#5aa9ff", "#3ccf8e", "#f2b84b", "#ff6b6b", "#b48ead", "#d08770", "#88c0d0", "#a3be8c"];

export function colour(i) {
  return PALETTE[i % PALETTE.length];
}

// "HH:MM:SS" (UTC) of `seconds`, or "HH:MM" when the axis steps by whole minutes.
function clockLabel(seconds, incr) {
  return new Date(seconds * 1e3).toISOString().slice(11, incr % 60 ? 19 : 16);
}

export class LineChart {
  // `extra`: fixed horizontal lines, [{label, value, colour}]
  constructor(host, { unit = "", height = 130, log = false } = {}) {
    this.log = log;
    this.host = host;
    this.unit = unit;
    this.height = height;
    this.plot = null;
    this.signature = "";
  }

  // xs: seconds (unix), lines: [{label, values}], rules: [{label, value}], span: [from, to] in
  // seconds — the x axis shows the page's time window (as the timelines beside it do), not
  // the data's extent: a single sample left uPlot to pad the axis out to years.
  update(xs, lines, rules = [], span = null) {
    this.span = span;
    const signature = [...lines.map((l) => l.label), ...rules.map((r) => `rule:${r.label}`)].join("|");
    const width = Math.max(200, this.host.clientWidth || 300);
    const data = [xs, ...lines.map((l) => l.values), ...rules.map((r) => xs.map(() => r.value))];
    if (signature !== this.signature || !this.plot) {
      if (this.plot) this.plot.destroy();
      this.signature = signature;
      const fg = cssVar("--muted") || "#888";
      const grid = cssVar("--line") || "#333";
      const axis = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid } };
      this.plot = new uPlot(
        {
          width, height: this.height,
          legend: { show: true, live: false },
          // UTC, as the timelines, the lease changes and the log (and pycm's text) tell time.
          tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"),
          cursor: { drag: { x: false, y: false } },
          scales: {
            x: { time: true, range: (u, min, max) => (this.span ? [...this.span] : [min, max]) },
            ...(this.log ? { y: { distr: 3 } } : {}),
          },
          // The time axis as the timelines and the log write it: 24-hour UTC, seconds when
          // the ticks fall between minutes (uPlot's own labels are 12-hour, with a date line).
          axes: [
            { ...axis, values: (u, splits, i, space, incr) => splits.map((s) => clockLabel(s, incr)) },
            { ...axis, size: 60, label: this.unit },
          ],
          series: [
            {},
            ...lines.map((l, i) => ({ label: l.label, stroke: colour(i), width: 2, spanGaps: true, points: { show: this.log, size: 4 } })),
            ...rules.map((r) => ({ label: r.label, stroke: cssVar("--bad") || "#f66", width: 1, dash: [6, 4], points: { show: false } })),
          ],
        },
        data,
        this.host,
      );
      this.width = width;
    } else {
      if (width !== this.width) {
        this.plot.setSize({ width, height: this.height });
        this.width = width;
      }
      this.plot.setData(data);
    }
  }
}
