// dispatch.js: each message the player shows goes to the module that
// draws it, and lights the loop if it is of now.
import { h } from "../base.js";
import { state, olderThanPage } from "./state.js";
import { light, notePast } from "./loop.js";
import { addRow, onEvent, onStart, onStep, reset } from "./timeline.js";
import { onState } from "./cards.js";
import { onController } from "./controller.js";
import { onQueue, clearQueue } from "./graph.js";

export function handle(m) {
  state.handlingLive = !olderThanPage(m);
  switch (m.type) {
    case "reset": state.rendered = 0; reset(m); clearQueue(); return;
    // The work queue's numbers: a picture beside the timeline, no row.
    case "queue": onQueue(m); return;
    case "state": onState(m); return;
    case "controller": onController(m); return;
    case "dropped":
      addRow(h("li", { class: "row notice", "data-db": "" }, m.message || "some steps were dropped"));
      return;
    case "event": onEvent(m); break;
    case "reconcile.start": onStart(m); break;
    default:
      if (m.reconcileID) onStep(m);
  }
  if (olderThanPage(m)) notePast(); else light(m);
}
