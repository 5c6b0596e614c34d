// progress.js: reports the learner's progress, kept in this browser's
// localStorage, to oplab (POST /lab/progress), so the instructor's roster
// can show who is where. It runs on every page (the layout loads it); the
// report goes with the learner's session and is never shown to other
// learners. On the lab page it also records the scenarios the learner saw
// through, and offers the display name field.
import { KEY, h, store } from "./base.js";

(() => {
  const WATCHED = [KEY.name, KEY.scenarios, KEY.quiz, KEY.reviews, KEY.challenges];

  const load = store.load;
  const loadName = () => store.text(KEY.name);
  const saveName = (name) => store.saveText(KEY.name, name);

  const count = (n) => Number.isInteger(n) && n >= 0 ? n : 0;
  // CHALLENGE_ID is the server's rule for a challenge ID (lessons.ValidSlug,
  // at most 63 characters): web/session's tests hold the two together.
  const CHALLENGE_ID = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

  // refused holds what this oplab refused of the stored progress: a
  // scenario ("s:NAME") or challenge ("c:ID") it does not know, or a
  // challenge's count of tasks ("c:ID:of=N") it no longer has. They stay in
  // storage (another oplab may take them; the challenge's page corrects a
  // count) and are left out of this page's reports.
  const refused = new Set();

  // build is the report, cut to what the server accepts: storage written
  // by an older or broken page, or for a course that has since changed,
  // must not make every report fail.
  function build(nameOverride) {
    const r = {};
    const name = nameOverride !== undefined ? nameOverride : loadName();
    if (name !== null) r.name = name;
    const sc = load(KEY.scenarios, []);
    r.scenarios = Array.isArray(sc) ? sc.filter((s) => typeof s === "string" && !refused.has("s:" + s)).slice(0, 32) : [];
    r.challenges = {};
    const ch = load(KEY.challenges, {});
    if (ch && typeof ch === "object") {
      for (const [id, c] of Object.entries(ch).slice(0, 64)) {
        if (!CHALLENGE_ID.test(id) || !c || refused.has("c:" + id)) continue;
        const of = count(c.of), done = count(c.done);
        if (of >= 1 && done <= of && !refused.has(`c:${id}:of=${of}`)) r.challenges[id] = { done, of };
      }
    }
    const quiz = load(KEY.quiz, null);
    r.quizBest = quiz ? count(quiz.best) : 0;
    const reviews = load(KEY.reviews, []);
    r.cardsReviewed = Array.isArray(reviews) ? reviews.length : count(reviews);
    return r;
  }

  let lastSent = "";
  let noSession = false;

  // send posts the report if it changed since the last one (or force).
  // It resolves to the server's error, if any: {field, error}. A stored
  // scenario or challenge the server refuses is left out and the report
  // sent again, a few times at most.
  async function send(force, nameOverride) {
    for (let tries = 0; ; tries++) {
      const [problem, sent] = await post(force, nameOverride);
      if (!problem || tries === 8 || !leaveOut(problem, sent)) return problem;
      force = true;
    }
  }

  // leaveOut adds to refused what a refusal of the report sent names, if
  // it names a stored scenario or challenge: the fields "scenarios[I]",
  // "challenges.ID" and "challenges.ID.of".
  function leaveOut(problem, sent) {
    const field = String(problem.field || "");
    const sc = /^scenarios\[(\d+)\]$/.exec(field);
    const ch = /^challenges\.([^.]+)(\.of)?$/.exec(field);
    let key = "";
    if (sc && typeof sent.scenarios[Number(sc[1])] === "string") key = "s:" + sent.scenarios[Number(sc[1])];
    else if (ch && ch[2] && sent.challenges[ch[1]]) key = `c:${ch[1]}:of=${sent.challenges[ch[1]].of}`;
    else if (ch && !ch[2]) key = "c:" + ch[1];
    if (!key || refused.has(key)) return false;
    refused.add(key);
    return true;
  }

  // post sends the report and resolves to the server's error, if any, and
  // the report it was about.
  async function post(force, nameOverride) {
    const report = build(nameOverride);
    if (noSession && !force) return [null, report];
    const body = JSON.stringify(report);
    if (!force && body === lastSent) return [null, report];
    let res;
    try {
      res = await fetch("/lab/progress", {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json" }, body,
      });
    } catch {
      return [null, report]; // offline: the next change or page reports again
    }
    if (res.ok) {
      lastSent = body;
      noSession = false;
      let held = null;
      try { held = (await res.json()).name; } catch { /* no name in the answer */ }
      // The session knows a name this browser does not (given on the
      // join form without script, or in another tab): keep and show it.
      if (held && loadName() === null) {
        saveName(held);
        const input = document.getElementById("learner-name-input");
        if (input && !input.value) input.value = held;
      }
      return [null, report];
    }
    let problem = { field: "", error: `progress refused (${res.status})` };
    try { problem = await res.json(); } catch { /* keep the status */ }
    // Without a session (a visitor who never opened the lab) there is
    // nowhere to keep a report: stop trying on this page.
    if (res.status === 403) noSession = true;
    return [problem, report];
  }

  // later reports within 2 s, once for whatever happens meanwhile: a
  // storm of stream messages must neither post per message nor, by
  // pushing a debounce back forever, never post at all.
  let timer = null;
  function later() {
    if (timer) return;
    timer = setTimeout(() => { timer = null; send(false); }, 2000);
  }

  // ---- scenarios seen through ----------------------------------------------
  // A scenario counts as done on the lab page that has it open, in this
  // learner's own namespace, when its point has been on the timeline. The
  // scenario's panel says what that is (data-through, from web/lab's
  // scenario list): for the ones that end well, its Database reached Ready;
  // for the ones whose point is a failure or a cleanup, the step that shows
  // it arrived.
  const isDB = (m, name) => m.type === "state" && m.object && m.object.kind === "Database" && m.object.name === name;
  const THROUGH = {
    ready: (name) => (m) => isDB(m, name) && m.state && Array.isArray(m.state.conditions)
      && m.state.conditions.some((c) => c.type === "Ready" && c.status === "True"),
    finalized: (name) => (m) => m.type === "finalizer" && m.database === name && m.phase === "removed",
    // Gone after Terminating: the escape hatch (finalizers removed) ends it too.
    gone: (name) => {
      let terminating = false;
      return (m) => {
        if (THROUGH.finalized(name)(m)) return true;
        if (!isDB(m, name)) return false;
        if (m.state && m.state.terminating) terminating = true;
        return !m.state && terminating;
      };
    },
    "status-writes": (name) => (m) => m.type === "status" && m.database === name && !m.skipped && (m.statusWrites || 0) >= 3,
    "already-exists": (name) => (m) => m.type === "action" && m.database === name && m.outcome === "AlreadyExists",
  };

  function markScenario(name) {
    const done = load(KEY.scenarios, []);
    const list = Array.isArray(done) ? done : [];
    if (list.includes(name)) return;
    list.push(name);
    store.save(KEY.scenarios, list);
    send(false);
  }

  function watchScenario() {
    const lab = document.getElementById("lab");
    const panel = lab && lab.dataset.mode === "live" && lab.querySelector(".scenario[data-through]");
    if (!panel) return;
    const name = panel.dataset.scenario;
    let through = null;
    try { through = JSON.parse(panel.dataset.through); } catch { return; }
    const rule = through && THROUGH[through.kind] && THROUGH[through.kind](through.database);
    if (!rule) return;
    document.addEventListener("oplab:message", (e) => {
      const m = e.detail;
      if (!m || (m.object && m.object.namespace && m.object.namespace !== lab.dataset.namespace)) return;
      if (rule(m)) markScenario(name);
    });
  }

  // ---- the display name ------------------------------------------------------
  function nameField() {
    const lab = document.getElementById("lab");
    const head = lab && lab.dataset.mode === "live" && lab.querySelector(".lab-head");
    if (!head) return;
    const input = h("input", { id: "learner-name-input", name: "name", maxlength: "40", autocomplete: "nickname", size: "18" });
    const status = h("span", { class: "learner-name-status", role: "status" });
    const form = h("form", { id: "learner-name", class: "learner-name small" },
      h("label", { for: "learner-name-input" }, "Your name"), " ", h("span", { class: "muted" }, "(shown to the instructor only)"), " ",
      input, " ", h("button", { type: "submit" }, "Save name"), " ", status);
    input.value = loadName() || "";
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const name = input.value.trim();
      const problem = await send(true, name);
      if (problem) {
        input.setAttribute("aria-invalid", "true");
        status.textContent = problem.error;
        status.classList.add("error");
        return;
      }
      saveName(name);
      input.value = name;
      input.removeAttribute("aria-invalid");
      status.classList.remove("error");
      status.textContent = name ? `Saved: the instructor sees you as ${name}.` : "Saved: no name.";
    });
    head.appendChild(form);
  }

  // The join form (no session yet) keeps the name it sends for later reports.
  function joinForm() {
    const form = document.querySelector("form[data-oplab-name]");
    if (!form) return;
    form.addEventListener("submit", () => {
      const name = (form.elements.name && form.elements.name.value || "").trim();
      if (name) saveName(name);
    });
  }

  function init() {
    joinForm();
    nameField();
    watchScenario();
    window.addEventListener("storage", (e) => { if (e.key === null || WATCHED.includes(e.key)) send(false); });
    document.addEventListener("oplab:message", later);
    // Pages that change storage themselves (the quiz, the flashcards) do
    // not get storage events: look again when the learner leaves or acts.
    document.addEventListener("visibilitychange", () => { if (document.hidden) send(false); });
    document.addEventListener("click", later);
    // A script that changes progress itself (the challenges') can say so;
    // and a slow look catches whatever changed without any event.
    document.addEventListener("oplab:progress", later);
    setInterval(() => send(false), 15000);
    send(true).then((problem) => {
      // A stored name the server refuses must not block every report.
      if (problem && problem.field === "name") {
        store.remove(KEY.name);
        send(true);
      }
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
