// stream.js: the live stream, a websocket to /ws (or to the stream of the
// lab the instructor looks at, or to the presenter's while following). It
// reconnects with a growing delay and asks for what it missed (since),
// and hands every message to the player, but the classroom's state, which
// it hands to classroom.js.
import { classroom } from "../classroom.js";
import { $ } from "./dom.js";
import { state } from "./state.js";
import { push } from "./player.js";
import { whileShown } from "../base.js";

// FOLLOW_ENDED is the event the stream sends to the document when the
// presenter's stream closed before it opened (the presentation ended):
// follow.js goes back to the learner's own lab. An event, since follow.js
// imports this module to reopen the stream it follows.
export const FOLLOW_ENDED = "oplab:follow-ended";

const status = $("#stream-status");
let lastSeq = 0;
let classroomSeq = 0;
let classroomTimer = null;
let delay = 1000;
let ws = null;
let retry = null;
let started = false; // connect has opened the first stream

function open() {
  clearTimeout(retry);
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const q = new URLSearchParams();
  if (state.followNs) q.set("follow", "presenter");
  if (lastSeq > 0) q.set("since", String(lastSeq));
  const qs = q.toString() ? "?" + q : "";
  const sock = new WebSocket(`${proto}//${location.host}${state.look || "/ws"}${qs}`);
  let opened = false;
  ws = sock;
  sock.onopen = () => {
    opened = true;
    delay = 1000;
    // The status says the stream is open, and whose it is.
    if (status) status.textContent = state.followNs ? "live, following" : "live";
  };
  sock.onmessage = (e) => {
    if (ws !== sock) return; // replaced by the other stream
    let batch;
    try { batch = JSON.parse(e.data); } catch (err) { return; }
    batch = Array.isArray(batch) ? batch : [batch];
    const shown = [];
    for (const m of batch) {
      // After a reset the server may count from 1 again.
      if (m.type === "reset") { lastSeq = 0; classroomSeq = 0; }
      else if (m.seq > lastSeq) lastSeq = m.seq;
      // The classroom's state is never held by the player: it is what
      // tells a follower where the presenter's player is. A fresh
      // stream replays the recent ones; only the newest counts.
      if (m.type === "state" && m.object && m.object.kind === "Classroom") {
        const c = state.mode === "live" && !state.look ? classroom : null;
        if (c && m.seq > classroomSeq) {
          classroomSeq = m.seq;
          const st = m.state;
          clearTimeout(classroomTimer);
          classroomTimer = setTimeout(() => c.receive(st), 50);
        }
        continue;
      }
      shown.push(m);
    }
    push(shown);
    for (const m of shown) document.dispatchEvent(new CustomEvent("oplab:message", { detail: m }));
  };
  sock.onclose = () => {
    if (ws !== sock) return; // replaced by the other stream
    // A presentation that ended before the follow stream opened (409):
    // back to the own stream, whose classroom state says what next.
    if (state.followNs && !opened) {
      document.dispatchEvent(new CustomEvent(FOLLOW_ENDED)); // follow.js opens the own stream
      return;
    }
    if (status) status.textContent = `reconnecting in ${Math.round(delay / 1000)}s…`;
    retry = setTimeout(open, delay);
    delay = Math.min(delay * 2, 10000);
  };
}

export function connect() {
  started = true;
  open();
  // Back from the back/forward cache, it asks for what it missed (since).
  whileShown(() => { delay = 1000; open(); }, shut);
}
// shut closes the stream without reconnecting.
function shut() {
  clearTimeout(retry);
  const old = ws;
  ws = null;
  if (old) old.close();
}
// reopen opens the stream afresh, from the start of its past: another
// namespace's (following) or the learner's own again.
export function reopen() {
  lastSeq = 0;
  if (!started) return;
  shut();
  delay = 1000;
  open();
}
