// standing.js: the learner's standing in the class, on every page. It asks
// GET /lab/session, which never counts as a visit, and shows under the
// classroom banner:
//   - the name prompt, while the session has no name (every way in asks;
//     the live lab asks in its own head, progress.js);
//   - Raise hand (with a note) at the end of the top bar, where it takes
//     no line of the page; once raised, under the banner, how long it
//     waits and whether the instructor is on their way; Lower hand;
//   - before the idle expiry, a banner with the time left and Stay (one
//     click, POST /lab/stay); at the expiry, the page that says the lab
//     ended, with the export taken then.
// The countdown is drawn outside any live region; the banner's arrival is
// said once in a status region, as the class timer's is.
import { h, tabStore, whileShown } from "./base.js";

const banner = document.getElementById("classroom-banner");
const box = h("div", { id: "standing", class: "standing" });
(banner || document.querySelector("main") || document.body).insertAdjacentElement(banner ? "afterend" : "afterbegin", box);
const say = h("p", { id: "standing-say", class: "visually-hidden", role: "status" });
box.append(say);
// The unraised hand sits in the top bar, after the page links.
const handSpot = h("div", { id: "standing-raise", class: "standing-raise" });
document.querySelector("header.top nav")?.append(handSpot);
const onInstructorPage = location.pathname.startsWith("/instructor");
// The lab looked at over a shoulder carries data-look with the learner;
// every lab has the attribute, empty when it is the viewer's own.
const lookingOn = !!document.querySelector("#lab[data-look]:not([data-look=\"\"])");
const liveLab = !!document.querySelector("#lab[data-mode=\"live\"]");

let st = null; // the last standing the server gave
let skew = 0; // server clock minus this page's
let expiryTimer = null, tick = null, poll = null;

async function ask(method, path, body) {
  const init = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let res;
  try { res = await fetch(path, init); } catch { return null; }
  let data = {};
  try { data = await res.json(); } catch { /* none */ }
  return { status: res.status, data };
}

async function refresh(method = "GET", path = "/lab/session", body) {
  const r = await ask(method, path, body);
  if (!r) return;
  if (r.status === 410 && r.data.ended) {
    // The lab ended while this page was open: show what was kept.
    if (location.pathname !== r.data.ended.page) location.assign(r.data.ended.page);
    return;
  }
  if (r.status !== 200) { st = null; draw(); return; }
  st = r.data;
  skew = st.now - Date.now();
  draw();
  schedule();
}

const serverNow = () => Date.now() + skew;

function clockText(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000)), m = Math.floor(s / 60), r = s % 60;
  return `${m}:${String(r).padStart(2, "0")}`;
}

// schedule wakes the page when the banner is due, and at the expiry.
function schedule() {
  clearTimeout(expiryTimer);
  if (!st || st.instructor) return;
  const left = st.expires - serverNow();
  const until = left > st.warn ? left - st.warn : left;
  // Another tab may have stayed meanwhile: ask again before warning.
  expiryTimer = setTimeout(() => refresh(), Math.max(until, 0) + 500);
}

function drawName(parts) {
  if (!st || st.name || st.instructor || lookingOn || liveLab || tabStore.text("oplab.name.later") === st.namespace) return;
  const input = h("input", { id: "standing-name", name: "name", maxlength: "40", autocomplete: "nickname", required: true, size: "20" });
  const note = h("span", { class: "standing-note", id: "standing-name-note" });
  const form = h("form", { class: "standing-name", "aria-labelledby": "standing-name-label" },
    h("label", { id: "standing-name-label", for: "standing-name" }, "Your name, for your instructor's class list:"), " ", input, " ",
    h("button", { type: "submit", class: "button primary" }, "Save name"), " ",
    h("button", { type: "button", class: "button", id: "standing-name-later" }, "Not now"), " ", note);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const r = await ask("POST", "/lab/progress", { name: input.value.trim() });
    if (r && r.status === 200) { refresh(); return; }
    note.textContent = (r && r.data && r.data.error) || "Not saved: try again.";
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", "standing-name-note");
  });
  form.querySelector("#standing-name-later").addEventListener("click", () => { tabStore.saveText("oplab.name.later", st.namespace); draw(); });
  parts.push(form);
}

function drawHand(parts, bar) {
  if (!st || st.instructor || onInstructorPage || lookingOn) return;
  const hand = st.hand;
  if (!hand) {
    const note = h("input", { id: "standing-note", name: "note", maxlength: "140", placeholder: "stuck on… (optional)", size: "16" });
    const form = h("form", { class: "standing-hand" },
      h("label", { for: "standing-note", class: "visually-hidden" }, "What you are stuck on"), note, " ",
      h("button", { type: "submit", class: "button" }, "Raise hand"));
    form.addEventListener("submit", (e) => { e.preventDefault(); refresh("POST", "/lab/help", { note: note.value }); });
    bar.push(form);
    return;
  }
  const waited = Math.max(0, Math.round((serverNow() - Date.parse(hand.raised)) / 60000));
  const words = hand.answered ? "Your instructor is on the way." : `Hand raised${waited ? ` ${waited} min ago` : ""}: your instructor sees it in their help queue.`;
  const lower = h("button", { type: "button", class: "button", id: "standing-lower" }, "Lower hand");
  lower.addEventListener("click", () => refresh("POST", "/lab/help/lower"));
  parts.push(h("p", { class: "standing-hand raised", "data-answered": String(!!hand.answered) }, h("b", {}, words), " ",
    hand.note ? h("q", {}, hand.note) : "", " ", lower));
}

let warned = "";
function drawExpiry(parts) {
  clearInterval(tick); tick = null;
  if (!st || st.instructor) return;
  const left = st.expires - serverNow();
  if (left > st.warn) return;
  const time = h("span", { class: "standing-left" }, clockText(left));
  const stay = h("button", { type: "button", class: "button primary", id: "standing-stay" }, "Stay");
  stay.addEventListener("click", () => refresh("POST", "/lab/stay"));
  parts.push(h("p", { class: "standing-expiry flash flash-error" },
    h("b", {}, "Your lab ends in "), time, h("b", {}, " unless you stay."),
    " Your results and your lab's export are kept when it ends. ", stay));
  const key = String(st.expires);
  if (warned !== key) {
    warned = key;
    say.textContent = `Your lab ends in ${Math.ceil(left / 60000)} minutes unless you press Stay.`;
  }
  tick = setInterval(() => { time.textContent = clockText(st.expires - serverNow()); }, 1000);
}

let drawn = "";
function draw() {
  const key = JSON.stringify(st) + tabStore.text("oplab.name.later");
  if (key === drawn && !tick) return;
  drawn = key;
  const hadFocus = box.contains(document.activeElement) || handSpot.contains(document.activeElement) ? document.activeElement.id : "";
  const parts = [], bar = [];
  drawExpiry(parts);
  drawName(parts);
  drawHand(parts, bar);
  box.replaceChildren(say, ...parts);
  handSpot.replaceChildren(...bar);
  if (hadFocus) document.getElementById(hadFocus)?.focus();
  // A raised hand is polled, so the learner sees the instructor's answer.
  clearInterval(poll); poll = null;
  if (st && st.hand) poll = setInterval(() => refresh(), 15000);
}

whileShown(() => refresh(), () => { clearInterval(poll); poll = null; });
refresh();
