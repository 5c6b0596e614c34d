// controller.js: the controller's own messages on the timeline (started,
// stopped, paused, restarted, a control-plane process down) and a scripted
// demo's narration, with the presenter's keys that move a demo on.
import { h } from "../base.js";
import { $, timeEl } from "./dom.js";
import { state, whose } from "./state.js";
import { showPaused, showController, drawControllerPill } from "./loop.js";
import { addRow, knowObject } from "./timeline.js";

export function onController(m) {
  if (m.phase === "narration") { onNarration(m); return; }
  if (m.object && m.object.kind === "Tester") { onTester(m); return; }
  if (m.phase === "challenge-started") {
    // A challenge's Start wiped the namespace: what is below is from
    // before, though its Databases may have the same names.
    addRow(h("li", { class: "row controller divider", "data-db": "" },
      h("div", { class: "row-head" }, timeEl(m.time), " ", h("span", { class: "pill warn" }, "challenge started"), " ", m.message || "")));
    return;
  }
  if (m.object && m.object.kind === "ControlPlane") {
    // A control-plane process went down or came back: say so in the
    // timeline, and leave the controller's own pill alone.
    const up = m.phase === "control-plane-restarted";
    addRow(h("li", { class: "row controller", "data-db": "" },
      h("div", { class: "row-head" }, timeEl(m.time), " ",
        h("span", { class: "pill " + (up ? "ok" : "bad") }, m.object.name + (up ? " back" : " down")), " ", m.message || "")));
    return;
  }
  const mine = m.object && m.object.namespace;
  if (mine && mine !== (state.followNs || state.namespace)) return;
  if (m.phase === "restarted") {
    addRow(h("li", { class: "row controller", "data-db": "" },
      h("div", { class: "row-head" }, timeEl(m.time), " ", h("span", { class: "pill warn" }, "oplab restarted"), " ", m.message || "")));
    return;
  }
  if (mine && (m.phase === "handed-over" || m.phase === "taken-back")) {
    // The learner's own reconciler took the namespace over, or gave it
    // back: the pause is untouched, the pill says whose code reconciles.
    const over = m.phase === "handed-over";
    if (!state.followNs) { state.yourCode = over; drawControllerPill(); }
    addRow(h("li", { class: "row controller", "data-db": "" },
      h("div", { class: "row-head" }, timeEl(m.time), " ",
        h("span", { class: "pill ok" }, over ? "your code runs" : "oplab's reconciler back"), " ", m.message || "")));
    return;
  }
  if (mine) showPaused(m.phase === "paused");
  else showController(m.phase === "started");
  const cls = { started: "ok", resumed: "ok", paused: "warn" }[m.phase] || "bad";
  addRow(h("li", { class: "row controller", "data-db": "" },
    h("div", { class: "row-head" }, timeEl(m.time), " ",
      h("span", { class: "pill " + cls }, (mine ? whose() + " namespace " : "controller ") + (m.phase || "")), " ", m.message || "")));
}

// The reconciler tester's own rows, in the replay of a test's schedule:
// what it did to the learner's code (an action, a crash, a stale read) and
// what it found; the row the page marks (data-mark) is where the schedule
// went wrong, scrolled into view when it comes.
function onTester(m) {
  const mark = $("#lab")?.dataset.mark;
  const marked = !!mark && String(m.seq) === mark;
  const row = h("li", { class: "row controller tester" + (marked ? " marked" : ""), "data-db": "", "data-seq": m.seq ? String(m.seq) : null },
    h("div", { class: "row-head" }, timeEl(m.time), " ",
      h("span", { class: "pill " + (marked ? "bad" : "running") }, marked ? "went wrong here" : "tester"), " ", m.message || ""));
  addRow(row);
  if (marked) requestAnimationFrame(() => row.scrollIntoView({ block: "center" }));
}

// A scripted demo's narration (web/demo): the instructor's words, in
// order among the reconciles they announce; a failed step shows its error.
function onNarration(m) {
  noteDemo(m);
  // A demo's step is about its Database: select it, as the presenter
  // would, so the room (and every follower) sees that card and its rows.
  const filterEl = $("#filter");
  if (m.database && filterEl && !state.followNs && filterEl.value !== m.database) {
    knowObject(m.database);
    filterEl.value = m.database;
    filterEl.dispatchEvent(new Event("change"));
  }
  addRow(h("li", { class: "row controller narration" + (m.error ? " error" : ""), "data-db": "" },
    h("div", { class: "row-head" }, timeEl(m.time), " ",
      h("span", { class: "pill " + (m.error ? "bad" : "running") }, "demo " + ((m.object && m.object.name) || "")), " ",
      h("span", { class: "narration-text" }, m.message || ""))));
}

// ---- the presenter's keys during a scripted demo -------------------------
// A demo plays in the instructor's own lab namespace, and waits after each
// step for the presenter. On that lab (the projector) → and space ask for
// the next step, as a clicker moves slides on: the instructor cookie of
// this browser lets the request through (/instructor/demo/next). Only
// while a demo's narration says one is under way on this timeline, never
// while following someone, and never while focus is in a form field (or,
// for space, on anything space would press).
let underWay = false;
let line = null;
// begun is the step the presenter's last key began, whose "begun" line
// its own narration, arriving after the reply, must not replace.
let begun = 0;
function say(text) {
  if (!line) {
    line = h("p", { id: "demo-keys", class: "muted small", role: "status" });
    $(".timeline-head")?.after(line);
  }
  line.textContent = text;
  line.hidden = !text;
}
// noteDemo reads a narration: "Step 2 of 6: …" while a demo is under way;
// its end ("is over", "stopped") says it is not.
function noteDemo(m) {
  // Followers get the presenter's narrations too: only a demo in this
  // lab's own namespace is one these keys may move on.
  const step = !m.error && !!m.object && m.object.namespace === state.namespace && /^Step (\d+) of \d+: /.exec(m.message || "");
  underWay = !!step;
  if (step && Number(step[1]) === begun) return;
  begun = 0;
  if (state.mode === "live" && !state.followNs) say(underWay ? "Demo under way: press → or space for its next step." : "");
}
async function nextStep() {
  say("Asking for the demo's next step…");
  try {
    const res = await fetch("/instructor/demo/next", {
      method: "POST", credentials: "same-origin", headers: { Accept: "application/json" },
    });
    if (res.status === 401 || res.status === 403) {
      say("→ and space move the demo on only in the instructor's browser: open /instructor in this browser once.");
      return;
    }
    const reply = await res.json();
    const st = reply.status || {};
    if (reply.error) say("Next: " + reply.error.replace(/^refused: /, ""));
    else if (st.state === "finished") say("The demo is over.");
    else { begun = st.step; say(`Step ${st.step} of ${st.of} begun: ${st.stepTitle}.`); }
  } catch (_) {
    say("The next step could not be asked for: is oplab still running?");
  }
}
export function setupDemoKeys() {
  if (state.mode !== "live") return;
  document.addEventListener("keydown", (e) => {
    if (!underWay || state.followNs || e.defaultPrevented || e.repeat || e.ctrlKey || e.metaKey || e.altKey || e.shiftKey) return;
    if (e.key !== "ArrowRight" && e.key !== " ") return;
    const fields = "input, select, textarea, [contenteditable]";
    if (e.target.closest && e.target.closest(e.key === " " ? fields + ", button, a[href], summary, [tabindex]" : fields)) return;
    e.preventDefault();
    nextStep();
  });
}
