// exercises.js: the code page's list of code exercises. Each one the
// learner has started (on its own page, in any tab) has its tasks checked
// live, as its challenge page checks them: the same status, the same record
// of what is done (tasks.js), so a task done here counts there and in the
// instructor's roster. The line at the top of the page names the exercise
// in progress and its next task.
import { KEY } from "./base.js";
import { ICONS, LABELS, check, keep, progressOf, record } from "./tasks.js";

(function () {
  const POLL_MS = 2000;
  const list = document.getElementById("code-exercises");
  if (!list) return;
  const now = document.getElementById("code-exercise-now");
  const items = [...list.querySelectorAll(".exercise")];

  // One entry an exercise: its element and this browser's record of it.
  const exercises = items.map((el) => ({ el, id: el.dataset.challenge, of: Number(el.dataset.of), mine: null, asking: false }));
  function reload() {
    exercises.forEach((x) => { x.mine = progressOf(x.id, x.of); });
  }

  function paint(li, state, text) {
    li.dataset.state = state;
    li.querySelector(".icon").textContent = ICONS[state] || "";
    li.querySelector(".state-label").textContent = LABELS[state] || "";
    li.querySelector("[data-detail]").textContent = text;
  }

  function show(x, states) {
    const texts = record(x.mine, states);
    keep(x.id, x.mine);
    states.forEach((s, i) => {
      const li = x.el.querySelector(`[data-task="${CSS.escape(s.id)}"]`);
      if (li) paint(li, s.state, texts[i]);
    });
    progress(x);
  }

  // fromRecord shows what this browser's record says, before (or, once
  // every task is done, instead of) a check: the tasks done, with the
  // words their checks said; the others as not yet checked, or, after a
  // new Start, not done.
  function fromRecord(x) {
    x.el.querySelectorAll("[data-task]").forEach((li) => {
      const id = li.dataset.task;
      if (x.mine.started && x.mine.tasks[id] === "done") paint(li, "done", (x.mine.details || {})[id] || "");
      else if (li.dataset.state === "done" || !x.mine.started) paint(li, "", "");
    });
    progress(x);
  }

  function progress(x) {
    const p = x.el.querySelector("[data-progress]");
    x.el.dataset.started = x.mine.started ? "true" : "false";
    if (!x.mine.started) return;
    p.textContent = x.mine.done >= x.of ? "Completed" : x.mine.done + " of " + x.of + " tasks done";
    headline();
  }

  // headline names the exercise started last that is not complete, and
  // its first task to do.
  function headline() {
    const started = exercises.filter((x) => x.mine.started).sort((a, b) => b.mine.started - a.mine.started);
    const open = started.find((x) => x.mine.done < x.of);
    if (!open) {
      if (started.length) now.textContent = "Every exercise you started is complete: " + started.length + " of " + exercises.length + ". The others are listed below.";
      return;
    }
    const next = open.el.querySelector('[data-state="todo"] .task-text');
    const line = [document.createTextNode("Exercise in progress: ")];
    const a = document.createElement("a");
    a.href = "#" + open.el.id;
    a.textContent = open.el.querySelector(".exercise-title").textContent;
    line.push(a, document.createTextNode(", " + open.mine.done + " of " + open.of + " tasks done" +
      (next ? ". Next: " + firstSentence(next.textContent) : ".")));
    now.replaceChildren(...line);
  }

  function firstSentence(text) {
    const t = text.trim().replace(/\s+/g, " ");
    const end = t.search(/[.:](\s|$)/);
    return end > 0 ? t.slice(0, end + 1) : t;
  }

  async function poll(x) {
    if (!x.mine.started || x.mine.done >= x.of || x.asking) return;
    x.asking = true;
    const asked = x.mine.started;
    try {
      const answer = await check(x.el.dataset.status, x.mine);
      // A Start in another tab meanwhile makes this answer an earlier start's.
      if (answer && progressOf(x.id, x.of).started === asked) show(x, answer.tasks);
    } catch (e) {
      /* the server restarts or the network blinks: the next poll tries again */
    } finally {
      x.asking = false;
    }
  }
  function pollAll() {
    if (document.hidden) return;
    exercises.forEach(poll);
  }

  // A Start, or a task turned done, on a challenge page in another tab.
  addEventListener("storage", (e) => {
    if (e.key !== KEY.challenges && e.key !== null) return;
    reload();
    exercises.forEach(fromRecord);
    pollAll();
  });

  // Load the exercise's starting code, as the page's own Load does.
  list.addEventListener("click", (e) => {
    const b = e.target.closest("button[data-starter]");
    if (!b) return;
    document.getElementById("starter").value = b.dataset.starter;
    document.getElementById("load").click();
    document.getElementById("source").focus();
  });

  reload();
  exercises.forEach(fromRecord);
  pollAll();
  setInterval(pollAll, POLL_MS);
})();
