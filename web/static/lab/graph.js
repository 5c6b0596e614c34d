// graph.js: the work queue as a picture. Each second the namespace's share
// of the controller's queue changed, the controller sends a "queue"
// message (controller/queue.go): counters that only grow (events handed to
// the queue, keys added, retries, reconciles by result, the learner's
// code's among them) and gauges (keys ready, keys waiting out a delay,
// reconciles running). This module keeps the last minute of them and
// draws, second by second, events in against reconciles run, the queue's
// depth, retries and requeues: coalescing (many events, one reconcile),
// backoff (retries, gaps doubling) and a status storm (a reconcile every
// second, each an event) are seen at a glance. The same numbers are a
// table for screen readers and for anyone who wants them.
import { h, clock } from "../base.js";
import { $ } from "./dom.js";
import { state } from "./state.js";

const WINDOW = 60; // seconds drawn
const W = 600, H = 64; // the picture's own units
const samples = []; // {at: ms, q: the sample}, oldest first

const figure = $("#queue");
const svgEl = $("#queue-svg");
const caption = $("#queue-caption");
const tbody = $("#queue-rows");

// onQueue keeps a sample of the namespace this lab shows.
export function onQueue(m) {
  if (!m.queue || !figure) return;
  const at = new Date(m.time).getTime();
  if (isNaN(at)) return;
  samples.push({ at, q: m.queue });
  while (samples.length && samples[0].at < at - (WINDOW + 5) * 1000) samples.shift();
  figure.hidden = false;
  draw();
}
// clearQueue forgets the samples, before another namespace's stream.
export function clearQueue() {
  samples.length = 0;
  draw();
}

// ZERO is a sample counting nothing yet: what came before the first.
const ZERO = { events: 0, coalesced: 0, adds: 0, retries: 0, requeued: 0, reconciles: {}, yourCode: {} };
const total = (c) => (c ? (c.success || 0) + (c.error || 0) + (c.requeue || 0) + (c.requeueAfter || 0) : 0);

// seconds turns the samples into what happened in each second of the last
// minute up to now: the counters' growth, the gauges as they stood. A
// counter that went down is a controller started again: counted from 0.
function seconds(now) {
  const end = Math.floor(now / 1000);
  const out = [];
  for (let i = WINDOW - 1; i >= 0; i--) {
    out.push({ sec: end - i, events: 0, coalesced: 0, adds: 0, oplab: 0, code: 0, errors: 0, delayed: 0, requeued: 0, depth: 0, waiting: 0, active: 0, seen: false });
  }
  const first = end - WINDOW + 1;
  let prev = null;
  let counting;
  let gauge = null;
  for (const { at, q } of samples) {
    const sec = Math.floor(at / 1000);
    // The counting began at q.from: from zero then (a namespace's first
    // events, a controller started again). A sample counting from before
    // the minute drawn is only where the next one counts from.
    if (q.from !== counting) {
      counting = q.from;
      prev = Date.parse(q.from || "") >= (first - 1) * 1000 ? ZERO : null;
    }
    const fresh = !prev;
    const d = (f) => (fresh ? 0 : f(q) - f(prev));
    if (sec >= first && sec <= end) {
      const b = out[sec - first];
      b.events += d((x) => x.events);
      b.adds += d((x) => x.adds);
      b.coalesced += d((x) => x.coalesced || 0);
      b.code += d((x) => total(x.yourCode));
      b.oplab += d((x) => total(x.reconciles) - total(x.yourCode));
      b.errors += d((x) => x.reconciles.error || 0);
      b.delayed += d((x) => x.retries);
      b.requeued += d((x) => x.requeued || 0);
      b.seen = true;
    }
    prev = q;
    if (sec <= end) gauge = { sec, q };
  }
  // The gauges hold from one sample to the next.
  let g = null;
  let si = 0;
  const sorted = samples.filter((s) => Math.floor(s.at / 1000) <= end);
  for (const b of out) {
    while (si < sorted.length && Math.floor(sorted[si].at / 1000) <= b.sec) g = sorted[si++].q;
    if (g) { b.depth = g.depth; b.waiting = g.waiting; b.active = g.active; }
  }
  return { out, last: gauge ? gauge.q : null };
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

let drawn = "";
function draw() {
  if (!figure || !svgEl) return;
  const now = state.mode === "replay" && state.replayNow ? state.replayNow : Date.now();
  const { out, last } = seconds(now);
  const sum = (k) => out.reduce((n, b) => n + b[k], 0);
  const events = sum("events"), adds = sum("adds"), oplab = sum("oplab"), code = sum("code"), coalesced = sum("coalesced");
  const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;
  // In the timeline's words: an error is retried after a backoff; a
  // requeue asks to run again sooner than the resync.
  const text = last
    ? `Last 60 s: ${plural(events, "event", "events")} in → ${plural(adds, "add", "adds")} to the queue → ` +
      plural(oplab + code, "reconcile", "reconciles") + (code ? ` (${code} by your code)` : "") +
      (coalesced ? `, ${plural(coalesced, "event", "events")} coalesced` : "") +
      ` · ${plural(sum("errors"), "error", "errors")} retried with backoff · ${plural(sum("requeued"), "requeue", "requeues")}` +
      ` · now ${last.depth} queued, ${last.waiting} waiting out a delay, ${last.active} running`
    : "No queue activity in your namespace yet.";
  const key = text + "|" + out.map((b) => `${b.events},${b.oplab},${b.code},${b.depth},${b.waiting},${b.errors},${b.requeued}`).join(";");
  if (key === drawn) return;
  drawn = key;
  caption.textContent = text;

  const top = Math.max(4, ...out.map((b) => Math.max(b.events, b.oplab + b.code, b.depth + b.waiting)));
  const y = (v) => H - 4 - (v / top) * (H - 10);
  const bw = W / WINDOW;
  const kids = [svg("line", { class: "axis", x1: 0, y1: H - 4, x2: W, y2: H - 4 })];
  out.forEach((b, i) => {
    const x = i * bw;
    if (b.events) kids.push(svg("rect", { class: "ev", x: x + 1, y: y(b.events), width: bw / 2 - 1, height: H - 4 - y(b.events) }));
    if (b.oplab) kids.push(svg("rect", { class: "rec", x: x + bw / 2, y: y(b.oplab), width: bw / 2 - 1, height: H - 4 - y(b.oplab) }));
    if (b.code) kids.push(svg("rect", { class: "code", x: x + bw / 2, y: y(b.oplab + b.code), width: bw / 2 - 1, height: H - 4 - y(b.code) }));
    if (b.errors) kids.push(svg("circle", { class: "retry", cx: x + bw / 2, cy: 4, r: Math.min(4, 1.5 + b.errors) }));
    if (b.requeued) kids.push(svg("rect", { class: "requeue", x: x + 1, y: H - 3, width: bw - 2, height: 3 }));
  });
  const line = (k, cls) => svg("polyline", { class: cls, points: out.map((b, i) => `${(i + 0.5) * bw},${y(b[k])}`).join(" ") });
  kids.push(line("waiting", "waiting"), line("depth", "depth"));
  svgEl.replaceChildren(...kids);

  // The table: the seconds that saw something, newest first.
  if (tbody) {
    const rows = out.filter((b) => b.seen || b.depth || b.waiting).reverse().slice(0, 20);
    tbody.replaceChildren(...(rows.length ? rows.map((b) => h("tr", {},
      h("td", {}, clock(new Date(b.sec * 1000))), h("td", {}, b.events), h("td", {}, b.adds), h("td", {}, b.oplab), h("td", {}, b.code),
      h("td", {}, b.errors), h("td", {}, b.requeued), h("td", {}, b.delayed), h("td", {}, b.depth), h("td", {}, b.waiting)))
      : [h("tr", {}, h("td", { colspan: "10" }, "Nothing in the last minute."))]));
  }
}

// setupGraph slides the picture's minute along once a second, whether or
// not a sample came: an idle queue sends none.
export function setupGraph() {
  if (!figure) return;
  setInterval(draw, 1000);
}
