// replay.js: /lab/replay plays an exported timeline through the same
// player and the same drawing as the live lab. The status counts the
// messages shown; once all are, Freeze turns into Replay.
import { $ } from "./dom.js";
import { reset } from "./timeline.js";
import { clearCards } from "./cards.js";
import { setupPlayer, setPaused, load, showAll, idle } from "./player.js";

export function setupReplay() {
  const data = JSON.parse($("#replay-data").textContent);
  const msgs = data.messages || [];
  const status = $("#stream-status");
  const pauseBtn = $("#play-pause");
  let shown = 0;
  const count = () => { if (status) status.textContent = `${shown} / ${msgs.length}`; };
  // The player tells the replay of each message it shows, and when it has
  // shown them all.
  setupPlayer({
    onShown() { shown++; count(); },
    onDone() { if (pauseBtn) pauseBtn.textContent = "Replay"; },
  });
  // A test's counterexample (data-mark) opens with every row shown, so
  // the row where it went wrong is in view at once.
  const marked = !!$("#lab")?.dataset.mark;
  function restart() {
    shown = 0;
    reset({ message: "replaying from the start" });
    clearCards();
    load(msgs);
    setPaused(false);
    if (marked) showAll();
  }
  // Once every message is shown, the button plays them again.
  pauseBtn?.addEventListener("click", (e) => {
    if (idle()) { e.stopImmediatePropagation(); restart(); }
  }, true);
  $("#replay-all")?.addEventListener("click", showAll);
  restart();
}
