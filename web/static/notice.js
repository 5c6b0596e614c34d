// notice.js: what the instructor tells the whole class, on every page,
// under the classroom banner: their broadcast message, who stopped the
// controller for everyone and why, and, when they end the class, the move
// to the page of this learner's ended lab (its export is offered there).
// It draws from the classroom state (classroom.js); each notice is said
// once in a status region (per tab, across reloads), never at each redraw.
import { h, tabStore } from "./base.js";
import { classroom } from "./classroom.js";

const banner = document.getElementById("classroom-banner");
const box = h("div", { id: "class-notice", class: "class-notice" });
(banner || document.querySelector("main") || document.body).insertAdjacentElement(banner ? "afterend" : "afterbegin", box);
const say = h("p", { id: "class-notice-say", class: "visually-hidden", role: "status" });
const onInstructorPage = location.pathname.startsWith("/instructor");

function sayOnce(kind, key, text) {
  if (tabStore.text("oplab.notice." + kind) === key) return;
  tabStore.saveText("oplab.notice." + kind, key);
  say.textContent = text;
}

let drawn = "";
function draw(state) {
  const m = state && state.message, halt = state && state.halt, end = state && state.end;
  if (end && !onInstructorPage && location.pathname !== "/lab/ended" && tabStore.text("oplab.ended.seen") !== String(end.at)) {
    tabStore.saveText("oplab.ended.seen", String(end.at));
    location.assign("/lab/ended");
    return;
  }
  const key = JSON.stringify([m, halt]);
  if (key === drawn) return;
  drawn = key;
  const parts = [say];
  if (halt) {
    const why = halt.reason ? `: ${/[.!?]$/.test(halt.reason) ? halt.reason : halt.reason + "."}` : ".";
    parts.push(h("p", { class: "class-halt", id: "class-halt" }, h("b", {}, `${halt.by} stopped the controller for everyone`), why,
      " Nothing reconciles in any namespace until they start it again; your changes wait, queued."));
    sayOnce("halt", String(halt.since), `${halt.by} stopped the controller for everyone${why}`);
  }
  if (m) {
    parts.push(h("p", { class: "class-message", id: "class-message" }, h("b", {}, `${m.from}:`), " ", m.text));
    sayOnce("message", String(m.id), `${m.from} says: ${m.text}`);
  }
  box.replaceChildren(...parts);
}

classroom.onChange(draw);
draw(classroom.state());
