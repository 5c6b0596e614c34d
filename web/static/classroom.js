// classroom.js: the classroom on every page. When the instructor presents,
// a banner says "Following NAME" (a status region, so screen readers
// announce it), and the page goes where the presenter's page is; Esc breaks
// away and the banner offers Rejoin. The instructor's "send everyone to"
// link is followed once per id, following or not. On the live lab, lab/follow.js
// hands this file the classroom state from its own stream and does the
// following itself; elsewhere this file listens to /ws?classroom=1, which
// carries only the global messages.
import { KEY, h, store, tabStore, whileShown } from "./base.js";

const banner = document.getElementById("classroom-banner");
const lab = document.getElementById("lab");
// The instructor looking at a learner's lab is not in that lab: their
// tab takes no namespace from it.
const liveLab = !!lab && lab.dataset.mode === "live" && !lab.dataset.look;
if (liveLab) tabStore.saveText("oplab.namespace", lab.dataset.namespace || "");
const onInstructorPage = location.pathname.startsWith("/instructor");
let state = null;
const listeners = [];

const mine = () => (liveLab ? lab.dataset.namespace : tabStore.text("oplab.namespace")) || "";

function presenting() { return !!(state && state.presenting); }
function isPresenter() { return presenting() && !!state.namespace && state.namespace === mine(); }
function brokeAway() { return presenting() && tabStore.text("oplab.follow.off") === String(state.since); }
// following: someone else presents and this tab has not broken away.
function following() { return presenting() && !isPresenter() && !brokeAway() && !onInstructorPage; }

function breakAway() {
  if (!following()) return;
  tabStore.saveText("oplab.follow.off", String(state.since));
  changed();
}
function rejoin() {
  tabStore.saveText("oplab.follow.off", "");
  changed();
}

// place is where a path leads as far as following goes: the page, and
// on the lab the scenario (a learner's own projector mode is theirs).
function place(href) {
  const u = new URL(href, location.href);
  return u.pathname === "/lab" ? "/lab?scenario=" + (u.searchParams.get("scenario") || "") : u.pathname + u.hash;
}

let drawn = "";
function draw() {
  if (!banner) return;
  const n = state && state.narration;
  // The instructor's pages follow nobody and show no lab: which lab is
  // presented, and whether it is this browser's, their Present section
  // says (the server knows this browser's lab; this tab may never have
  // shown it).
  const mode = !presenting() ? "" : onInstructorPage ? "class" : isPresenter() ? "presenter" : following() ? "following" : "away";
  const key = [mode, state && state.name, n && n.text, n && n.step, n && n.paused].join("\u0000");
  // Redraw only when what the banner says changes: a screen reader
  // announces every change of a status region.
  if (key === drawn) return;
  drawn = key;
  const kids = [];
  if (mode === "following") {
    kids.push(h("p", {}, h("b", {}, `Following ${state.name}`),
      lab ? "— their lab, read-only." : "— this page goes where theirs does.",
      h("button", { type: "button", class: "button", id: "classroom-leave", "aria-keyshortcuts": "Escape" }, "Back to my lab (Esc)")));
  } else if (mode === "away") {
    kids.push(h("p", {}, `${state.name} is presenting.${lab ? " You are in your own lab." : ""} `,
      h("button", { type: "button", class: "button primary", id: "classroom-rejoin" }, `Rejoin ${state.name}`)));
  } else if (mode === "class") {
    kids.push(h("p", {}, h("b", {}, `${state.name} is presenting`), "— every learner follows their lab."));
  } else if (mode === "presenter") {
    kids.push(h("p", {}, h("b", {}, `Presenting as ${state.name}`), "— every learner follows this lab."));
  }
  if (n && n.text) {
    kids.push(h("p", { class: "narration" },
      n.of ? h("span", { class: "pill" }, `${n.demo ? n.demo + " · " : ""}step ${n.step} of ${n.of}${n.paused ? " · paused" : ""}`) : "",
      " ", n.text));
  }
  // A button pressed here is replaced by the other one (Rejoin by Back):
  // the focus moves to it, rather than to the page's start.
  const hadFocus = banner.contains(document.activeElement);
  banner.replaceChildren(...kids);
  document.getElementById("classroom-leave")?.addEventListener("click", breakAway);
  document.getElementById("classroom-rejoin")?.addEventListener("click", rejoin);
  if (hadFocus) banner.querySelector("button")?.focus();
}

// go follows the instructor's goto once per id, and the presenter's page
// while following.
function go() {
  if (!state || onInstructorPage) return;
  const g = state.goto;
  if (g && g.href && String(g.id) !== store.text(KEY.goto)) {
    store.saveText(KEY.goto, String(g.id));
    // An id is the time it was sent: a page opened minutes after is not
    // sent away by it.
    const fresh = Math.abs(Date.now() - g.id) < 2 * 60 * 1000;
    if (fresh && place(g.href) !== place(location.href)) {
      // The same page, another section: move there, as a link in the
      // page would (assign alone does not scroll to a new hash).
      const to = new URL(g.href, location.href);
      if (to.pathname === location.pathname && to.search === location.search && to.hash) {
        location.hash = to.hash;
        document.getElementById(decodeURIComponent(to.hash.slice(1)))?.scrollIntoView();
      } else location.assign(g.href);
      return;
    }
  }
  const path = state.view && state.view.path;
  // The instructor's own pages are not for followers.
  if (following() && path && !path.startsWith("/instructor") && place(path) !== place(location.href)) location.assign(path);
}

// The presenter's page says where it is, for followers to come along;
// the live lab says more (lab/follow.js).
let toldPath = "";
function tellPath() {
  if (liveLab || onInstructorPage || !isPresenter() || toldPath === state.since + location.pathname) return;
  toldPath = state.since + location.pathname;
  fetch("/lab/present", {
    method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ path: location.pathname + location.search, selected: "", paused: false, seq: 0, speed: 1 }),
  }).catch(() => {});
}

// The class timer: a countdown every page shows under the banner, out
// of any live region (a screen reader is not told every second), and one
// polite announcement each when a timer starts and when its time is up.
// A page without script shows the end time the server wrote, if any.
const timerSay = document.createElement("p");
timerSay.id = "class-timer-say";
timerSay.className = "visually-hidden";
timerSay.setAttribute("role", "status");
document.body.appendChild(timerSay);
let timerBox = document.getElementById("class-timer");
let ticking = null;
let timerDrawn = ""; // the timer's id and text as last drawn
function sayTimer(key, text) {
  // Once per timer and per tab, also across reloads.
  if (tabStore.text("oplab.timer.said") === key) return;
  tabStore.saveText("oplab.timer.said", key);
  timerSay.textContent = text;
}
function clock(ms) {
  const s = Math.ceil(ms / 1000), h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  const two = (n) => String(n).padStart(2, "0");
  return h ? `${h}:${two(m)}:${two(r)}` : `${m}:${two(r)}`;
}
function drawTimer() {
  const t = state && state.timer;
  if (!t) {
    clearInterval(ticking); ticking = null;
    if (timerBox) { timerBox.hidden = true; timerBox.replaceChildren(); timerDrawn = ""; }
    return;
  }
  if (!timerBox) {
    timerBox = h("div", { id: "class-timer", class: "class-timer" });
    (banner || document.querySelector("main") || document.body).insertAdjacentElement(banner ? "afterend" : "afterbegin", timerBox);
  }
  timerBox.hidden = false;
  const left = t.ends - Date.now();
  const up = left <= 0;
  const text = up ? "Time's up" : `${clock(left)} left`;
  const key = `${t.id}|${text}`;
  if (timerDrawn !== key) {
    timerDrawn = key;
    timerBox.dataset.up = String(up);
    timerBox.replaceChildren(h("span", { class: "class-timer-label" }, t.label), " ",
      h("span", { class: "class-timer-left" }, text));
  }
  const started = Date.now() - (t.ends - t.seconds * 1000);
  if (up) {
    clearInterval(ticking); ticking = null;
    // A page opened long after the end shows it but does not say it.
    if (-left < 60 * 1000) sayTimer(`${t.id}:up`, `Time's up: ${t.label}.`);
  } else {
    if (started < 10 * 1000) sayTimer(`${t.id}:start`, `Class timer started: ${t.label}, ${clock(t.seconds * 1000)}.`);
    if (!ticking) ticking = setInterval(drawTimer, 1000);
  }
}

function changed() {
  draw();
  drawTimer();
  for (const fn of listeners) fn(state);
  go();
  tellPath();
}
function receive(s) {
  state = s || null;
  changed();
}

document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && following()) { breakAway(); e.preventDefault(); }
});

// Pages without the live lab listen to the global messages only.
function listen() {
  let delay = 1000;
  let seen = 0;
  let timer = null;
  let ws = null;
  let retry = null;
  function open() {
    clearTimeout(retry);
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const sock = new WebSocket(`${proto}//${location.host}/ws?classroom=1`);
    ws = sock;
    sock.onmessage = (e) => {
      let batch;
      try { batch = JSON.parse(e.data); } catch (err) { return; }
      for (const m of Array.isArray(batch) ? batch : [batch]) {
        if (m.type === "reset") seen = 0;
        // A fresh stream replays the recent states; only the newest counts.
        if (m.type === "state" && m.object && m.object.kind === "Classroom" && m.seq > seen) {
          seen = m.seq;
          const st = m.state;
          clearTimeout(timer);
          timer = setTimeout(() => receive(st), 50);
        }
      }
    };
    let opened = false;
    sock.onopen = () => { opened = true; delay = 1000; };
    // Refused (a reader who never opened the lab has no session): ask
    // again rarely.
    sock.onclose = () => {
      if (ws !== sock) return; // closed on leaving the page
      retry = setTimeout(open, opened ? delay : 60000);
      delay = Math.min(delay * 2, 30000);
    };
  }
  open();
  whileShown(() => { delay = 1000; open(); }, () => { clearTimeout(retry); ws?.close(); ws = null; });
}

if (!liveLab) listen();

// classroom is what the live lab's modules (lab/follow.js, lab/stream.js)
// use: they hand it the classroom state from their own stream, and ask
// whom the page follows.
export const classroom = {
  receive, following, isPresenter, presenting, breakAway, rejoin,
  state: () => state,
  onChange: (fn) => listeners.push(fn),
};
