// The challenge pages. On /challenges/{id} it keeps the tasks current: it
// asks the server for their states every 1.5 s and soon after each message
// of the learner's stream, keeps what is done in this browser (tasks.js)
// and says aloud, through a live region, when a task turns done. Start
// posts the form with fetch so the page stays. On /challenges it shows each
// challenge's progress from what this browser keeps.
import { whileShown } from "./base.js";
import { ICONS, LABELS, check, doneIDs, keep, loadAll, progressOf, record } from "./tasks.js";

(function () {
  const POLL_MS = 1500;

  function listPage() {
    const all = loadAll();
    document.querySelectorAll("[data-progress]").forEach((el) => {
      const p = all[el.dataset.progress];
      if (!p || !p.of) return;
      el.textContent = p.done >= p.of ? "Completed" : p.done + " of " + p.of + " done";
    });
  }

  function challengePage(root) {
    const id = root.dataset.challenge;
    const of = Number(root.dataset.of);
    const announce = document.getElementById("announce");
    const doneCount = document.getElementById("done-count");
    const startMsg = document.getElementById("start-message");
    let mine = progressOf(id, of);
    // A Start by a plain form post comes back with ?since=: remember it.
    const since = root.dataset.since;
    if (since && String(mine.started || "") !== since) {
      mine = { tasks: {}, done: 0, of: of, started: Number(since) };
    }
    mine.of = of;
    // Progress saved before a challenge's tasks changed (a task renamed or
    // made an input) names tasks the page no longer has: they count for
    // nothing.
    const ids = new Set([...document.querySelectorAll(".task[data-task]")].map((li) => li.dataset.task));
    Object.keys(mine.tasks || {}).forEach((t) => { if (!ids.has(t)) delete mine.tasks[t]; });
    store();

    function store() { keep(id, mine); }

    function show(states) {
      let done = 0;
      const turned = [];
      const texts = record(mine, states);
      states.forEach((s, i) => {
        const li = document.getElementById("task-" + s.id);
        if (!li) return;
        if (s.state === "done") done++;
        if (li.dataset.state !== s.state) {
          if (s.state === "done") turned.push(li);
          li.dataset.state = s.state;
          li.querySelector(".state-label").textContent = LABELS[s.state] || s.state;
          li.querySelector(".icon").textContent = ICONS[s.state] || "";
        }
        // A question's or an input's form opens only while the task is to do.
        const fs = li.querySelector(".answer-form fieldset");
        if (fs) fs.disabled = s.state !== "todo";
        // A done input task shows the answer that was right, kept here.
        const typed = li.querySelector(".input-form input[name=answer]");
        if (typed && s.state === "done" && !typed.value && mine.answers && mine.answers[s.id]) typed.value = mine.answers[s.id];
        const detail = li.querySelector("[data-detail]");
        if (detail.textContent !== texts[i]) detail.textContent = texts[i];
      });
      doneCount.textContent = String(done);
      const complete = document.getElementById("complete");
      if (complete) complete.hidden = done < of;
      store();
      if (turned.length) {
        turned.forEach((li) => {
          li.classList.add("just-done");
          setTimeout(() => li.classList.remove("just-done"), 2000);
        });
        const names = turned.map((li) => li.querySelector(".task-text").textContent.trim().split(/[.:]/)[0]);
        announce.textContent = "Done: " + names.join("; ") + ". " + done + " of " + of + " tasks done." +
          (done === of ? " Challenge complete." : "");
      }
    }

    let inFlight = false;
    let again = false;
    // While Start wipes the namespace, the tasks shown are the last
    // start's: no poll may show them again as this one's.
    let starting = false;
    async function poll() {
      if (starting) return;
      if (inFlight) { again = true; return; }
      inFlight = true;
      try {
        const asked = mine.started;
        const answer = await check(root.dataset.status, mine);
        // An answer about an earlier start (a Start came meanwhile) is not
        // this one's.
        if (answer && !starting && mine.started === asked) show(answer.tasks);
        // Complete, the challenge leaves nothing retrying: the server says
        // which pitfalls it switched off.
        const complete = document.getElementById("complete");
        if (answer && answer.quieted.length && complete) {
          const note = complete.querySelector(".quieted") || complete.appendChild(document.createElement("span"));
          note.className = "quieted";
          note.textContent = ` Switched off the pitfall left on ${answer.quieted.join(", ")}, so nothing keeps retrying on your timeline.`;
        }
      } catch (e) {
        /* the server restarts or the network blinks: the next poll tries again */
      } finally {
        inFlight = false;
        if (again) { again = false; setTimeout(poll, 150); }
      }
    }

    // Soon after each stream message, but at most one poll per 300 ms.
    let soon = null;
    function pollSoon() {
      if (soon || mine.done >= of) return;
      soon = setTimeout(() => { soon = null; poll(); }, 300);
    }
    document.addEventListener("oplab:message", pollSoon);
    let ws = null;
    let retry = null;
    function connect() {
      clearTimeout(retry);
      const sock = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
      ws = sock;
      sock.addEventListener("message", pollSoon);
      sock.addEventListener("close", () => { if (ws === sock) retry = setTimeout(connect, 5000); });
    }
    connect();
    whileShown(connect, () => { clearTimeout(retry); ws?.close(); ws = null; });
    // Every task done: nothing more to check until the next Start.
    setInterval(() => { if (!document.hidden && mine.done < of) poll(); }, POLL_MS);
    poll();

    // A question task is graded by the server; a right answer is
    // remembered here, as a check's verdict is.
    document.querySelectorAll(".answer-form[data-answer]").forEach((af) => {
      af.addEventListener("submit", async (ev) => {
        ev.preventDefault();
        const feedback = af.querySelector("[data-feedback]");
        const task = af.dataset.answer;
        if (!af.querySelector("input[name=choice]:checked")) {
          feedback.textContent = "Pick an answer first.";
          return;
        }
        try {
          // The server judges the lock as the status does: from this
          // browser's start and the tasks it has seen done.
          const fields = new URLSearchParams(new FormData(af));
          fields.set("since", mine.started ? String(mine.started) : "");
          fields.set("done", doneIDs(mine).join(","));
          const res = await fetch(af.action, { method: "POST", body: fields, headers: { Accept: "application/json" } });
          const body = await res.json();
          if (!res.ok) {
            feedback.textContent = body.error || "The answer was not graded.";
            return;
          }
          // Right: the task turns done and its detail gives the explanation.
          feedback.textContent = body.correct ? "" : body.detail;
          if (body.correct) {
            mine.tasks[task] = "done";
            store();
            poll();
          }
        } catch (e) {
          feedback.textContent = "The answer was not graded: " + e;
        }
      });
    });

    // An input task: the typed answer is judged by the server against the
    // namespace and trace. What it says is tied to the field
    // (aria-describedby); a right answer's words are kept, since a later
    // status cannot say them again (the cluster moves on).
    document.querySelectorAll(".input-form").forEach((f) => {
      f.addEventListener("submit", async (ev) => {
        ev.preventDefault();
        const feedback = f.querySelector("[data-feedback]");
        const field = f.querySelector("input[name=answer]");
        const button = f.querySelector("button");
        const task = f.dataset.input;
        const refused = (text) => {
          feedback.textContent = text;
          field.setAttribute("aria-invalid", "true");
          field.focus();
        };
        button.disabled = true;
        try {
          const fields = new URLSearchParams(new FormData(f));
          fields.set("since", mine.started ? String(mine.started) : "");
          fields.set("done", doneIDs(mine).join(","));
          const res = await fetch(f.action, { method: "POST", body: fields, headers: { Accept: "application/json" } });
          const body = await res.json();
          if (!res.ok) { refused(body.error || "The answer was not checked."); return; }
          if (!body.correct) { refused(body.detail); return; }
          field.removeAttribute("aria-invalid");
          feedback.textContent = "";
          mine.details = mine.details || {};
          mine.details[task] = body.detail;
          mine.answers = mine.answers || {};
          mine.answers[task] = field.value.trim();
          mine.tasks[task] = "done";
          store();
          poll();
        } catch (e) {
          refused("The answer was not checked: " + e);
        } finally {
          button.disabled = false;
        }
      });
    });

    const form = document.getElementById("start-form");
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const button = form.querySelector("button");
      button.disabled = true;
      startMsg.textContent = "Starting: deleting your Databases and setting up…";
      // The tasks done before are no longer this challenge's progress:
      // the end is not shown, the list waits (dimmed, aria-busy) for the
      // new start's states.
      const section = document.getElementById("tasks");
      const complete = document.getElementById("complete");
      starting = true;
      section.setAttribute("aria-busy", "true");
      if (complete) complete.hidden = true;
      try {
        const res = await fetch(form.action, { method: "POST", body: new URLSearchParams(new FormData(form)), headers: { Accept: "application/json" } });
        const body = await res.json();
        if (!res.ok) {
          startMsg.textContent = body.error || "Start failed.";
          return;
        }
        mine = { tasks: {}, done: 0, of: of, started: body.started };
        store();
        document.querySelectorAll(".task").forEach((li) => { li.dataset.state = ""; });
        document.querySelectorAll(".answer-form").forEach((af) => {
          af.reset();
          af.querySelector("[data-feedback]").textContent = "";
          af.querySelectorAll("[aria-invalid]").forEach((el) => el.removeAttribute("aria-invalid"));
        });
        startMsg.textContent = body.message;
        form.reset();
      } catch (e) {
        startMsg.textContent = "Start failed: " + e;
      } finally {
        starting = false;
        section.removeAttribute("aria-busy");
        button.disabled = false;
        // Done or failed, the tasks are checked again now: a failed Start
        // shows again what still stands.
        poll();
      }
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    const root = document.getElementById("challenge");
    if (root) challengePage(root); else listPage();
  });
})();
