// home.js: the home page's progress box, read from what this browser kept.
import { KEY, store } from "../base.js";
import { readSlugs, countDue, forgetAll } from "./record.js";

export function initProgress() {
  const box = document.getElementById("progress");
  if (!box) return;
  const ids = (box.dataset.cards || "").split(" ").filter(Boolean);
  const stat = (name) => box.querySelector(`[data-stat="${name}"]`);
  stat("read").textContent = String(readSlugs().size);
  const quiz = store.load(KEY.quiz, null);
  stat("quiz").textContent = quiz ? String(quiz.best || 0) : "–";
  stat("due").textContent = String(countDue(ids, Date.now()));
  // A card never reviewed counts as due; say how many of them are new, so
  // a first visit does not read as a backlog.
  const states = store.load(KEY.cards, {});
  const fresh = ids.filter((id) => !states[id]).length;
  stat("new").textContent = fresh > 0 ? ` (${fresh} new)` : "";
  box.querySelector('[data-action="reset-progress"]').addEventListener("click", () => {
    if (!window.confirm("Forget all progress kept in this browser?")) return;
    forgetAll();
    window.location.reload();
  });
  box.hidden = false;
}
