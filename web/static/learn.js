// learn.js: enhancements for the course pages. Every page reads fine without
// it; with it, the quiz answers at once, the flashcards become a deck, and the
// learner's progress is kept in this browser's localStorage (the server keeps
// none). Grading and card scheduling are not done here: the page does not
// know the answers (POST /quiz/answer grades), and POST /flashcards/review
// and /flashcards/states run the Go FSRS-6 scheduler, so there is exactly
// one implementation of it.
"use strict";

(() => {
  // Storage keys. Each holds JSON.
  const KEY_READ = "oplab.read";   // [slug, ...] pages read to the end
  const KEY_QUIZ = "oplab.quiz";   // {results: {id: bool}, best: n}
  const KEY_CARDS = "oplab.cards"; // {id: State} as returned by the server (FSRS)
  const KEY_CARDS_SM2 = "oplab.cards.sm2"; // the SM-2 states, as they were before conversion
  const KEY_REVIEWS = "oplab.reviews"; // [{card, rating, at, recall, interval, due, ...}], newest last

  // Without storage (switched off, private mode) progress lasts for the
  // page only: base.js's store keeps it in memory then.
  const store = window.oplab.store;
  const load = store.load;
  const save = store.save;

  // ---- Progress shared by several pages ----

  function readSlugs() { return new Set(load(KEY_READ, [])); }

  function markRead(slug) {
    const read = readSlugs();
    if (read.has(slug)) return;
    read.add(slug);
    save(KEY_READ, [...read]);
    showReadMarks();
  }

  // showReadMarks ticks every outline entry the learner has read.
  function showReadMarks() {
    const read = readSlugs();
    for (const li of document.querySelectorAll("li[data-slug]")) {
      const done = read.has(li.dataset.slug);
      li.classList.toggle("is-read", done);
      const mark = li.querySelector(".read-mark");
      if (mark) mark.hidden = !done;
    }
  }

  function isDue(state, now) {
    if (!state || !state.due) return true;
    return Date.parse(state.due) <= now;
  }

  function countDue(ids, now) {
    const states = load(KEY_CARDS, {});
    return ids.filter((id) => isDue(states[id], now)).length;
  }

  function recordQuiz(id, correct) {
    const q = load(KEY_QUIZ, { results: {}, best: 0 });
    q.results[id] = correct;
    const score = Object.values(q.results).filter(Boolean).length;
    q.best = Math.max(q.best || 0, score);
    save(KEY_QUIZ, q);
  }

  // ---- Home ----

  function initProgress() {
    const box = document.getElementById("progress");
    if (!box) return;
    const ids = (box.dataset.cards || "").split(" ").filter(Boolean);
    const stat = (name) => box.querySelector(`[data-stat="${name}"]`);
    stat("read").textContent = String(readSlugs().size);
    const quiz = load(KEY_QUIZ, null);
    stat("quiz").textContent = quiz ? String(quiz.best || 0) : "–";
    stat("due").textContent = String(countDue(ids, Date.now()));
    box.querySelector('[data-action="reset-progress"]').addEventListener("click", () => {
      if (!window.confirm("Forget all progress kept in this browser?")) return;
      for (const k of [KEY_READ, KEY_QUIZ, KEY_CARDS, KEY_CARDS_SM2, KEY_REVIEWS]) store.remove(k);
      window.location.reload();
    });
    box.hidden = false;
  }

  // ---- Lesson ----

  // A page counts as read once its end (the footer after its text) has
  // been on screen. Opening a long page is not reading it: only the short
  // ones show their end at once. The footer says when the page has
  // counted, so the home page's "Pages read to the end" holds no surprise.
  function initLesson() {
    const article = document.querySelector("article.prose[data-slug]");
    const end = document.getElementById("lesson-end");
    if (!article || !end) return;
    const slug = article.dataset.slug;
    const note = end.querySelector(".read-note");
    const counted = () => {
      markRead(slug);
      if (note) note.hidden = false;
    };
    if (readSlugs().has(slug)) { counted(); return; }
    if (!("IntersectionObserver" in window)) { counted(); return; }
    const io = new IntersectionObserver((entries) => {
      if (!entries.some((e) => e.isIntersecting)) return;
      counted();
      io.disconnect();
    });
    io.observe(end);
  }

  // ---- Quiz ----

  function initQuiz() {
    const form = document.getElementById("quiz-form");
    if (!form) return;
    const result = document.getElementById("quiz-result");
    if (result) { recordGraded(form); return; }

    const live = document.getElementById("quiz-live");
    live.hidden = false;
    const answered = {};
    for (const fs of form.querySelectorAll("fieldset.question")) {
      const inputs = [...fs.querySelectorAll("input")];
      const btn = fs.querySelector("button.check");
      const grade = () => check(fs, inputs, answered, live);
      btn.addEventListener("click", grade);
      if (fs.dataset.multi === "true") {
        btn.hidden = false;
      }
      // A pointer pick of a single answer is graded at once. Arrow keys
      // also change a radio group's pick, so keyboard users browse the
      // choices freely and commit with Enter or the Check button.
      let browsing = false;
      fs.addEventListener("pointerdown", () => { browsing = false; });
      fs.addEventListener("keydown", (e) => {
        if (e.key.startsWith("Arrow")) {
          browsing = true;
          btn.hidden = false;
        } else if (e.key === "Enter" && e.target instanceof HTMLInputElement) {
          e.preventDefault(); // Enter would submit the whole form
          grade();
        }
      });
      // Enter in a choice would also submit the whole form (implicit
      // submission happens on keypress), so stop that too.
      fs.addEventListener("keypress", (e) => {
        if (e.key === "Enter" && e.target instanceof HTMLInputElement) e.preventDefault();
      });
      if (fs.dataset.multi !== "true") {
        for (const input of inputs) input.addEventListener("change", () => { if (!browsing) grade(); });
      }
    }
    // Answered questions are locked by disabling their inputs, and disabled
    // inputs are not submitted: unlock them so "Grade my answers" still
    // grades everything on the server.
    form.addEventListener("submit", () => {
      for (const input of form.querySelectorAll("input:disabled")) input.disabled = false;
    });
  }

  // check sends one answer to the server, which alone knows the correct
  // choices (the page does not carry them), and shows its verdict.
  async function check(fs, inputs, answered, live) {
    const picked = inputs.filter((i) => i.checked).map((i) => Number(i.value)).sort((a, b) => a - b);
    if (picked.length === 0 || fs.dataset.busy === "true" || fs.dataset.question in answered) return;
    fs.dataset.busy = "true";
    const feedback = fs.querySelector(".feedback");
    let verdict;
    try {
      const res = await fetch("/quiz/answer", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ question: fs.dataset.question, choices: picked }),
      });
      verdict = await res.json();
      if (!res.ok) throw new Error(verdict.error || `HTTP ${res.status}`);
    } catch (err) {
      feedback.querySelector(".verdict").textContent = "Could not check this answer: " + err.message;
      feedback.querySelector(".verdict").className = "verdict error";
      feedback.hidden = false;
      return;
    } finally {
      delete fs.dataset.busy;
    }
    const ok = verdict.correct;
    const correct = verdict.correctChoices || [];
    for (const input of inputs) {
      input.disabled = true;
      const li = input.closest("li");
      const isCorrect = correct.includes(Number(input.value));
      li.classList.toggle("is-correct", isCorrect);
      li.classList.toggle("is-wrong", input.checked && !isCorrect);
      if (isCorrect || input.checked) {
        const mark = document.createElement("span");
        mark.className = isCorrect ? "mark ok" : "mark error";
        mark.textContent = isCorrect ? "✓ correct answer" : "✗ your answer";
        li.append(mark);
      }
    }
    const btn = fs.querySelector("button.check");
    if (btn) btn.hidden = true;
    fs.classList.add(ok ? "right" : "wrong");
    const v = feedback.querySelector(".verdict");
    v.className = "verdict";
    v.innerHTML = ok ? '<b class="ok">Right.</b>' : '<b class="error">Not quite.</b>';
    feedback.querySelector(".explanation").textContent = verdict.explanation;
    feedback.hidden = false;

    answered[fs.dataset.question] = ok;
    recordQuiz(fs.dataset.question, ok);
    updateScore(answered, live);
  }

  function updateScore(answered, live) {
    const ids = Object.keys(answered);
    const missed = ids.filter((id) => !answered[id]);
    live.querySelector('[data-live="score"]').textContent = String(ids.length - missed.length);
    live.querySelector('[data-live="answered"]').textContent = String(ids.length);
    const retry = live.querySelector('[data-live="retry"]');
    retry.hidden = missed.length === 0;
    retry.href = "/quiz?only=" + encodeURIComponent(missed.join(","));
    retry.textContent = `Retry the ${missed.length} missed`;
  }

  // recordGraded keeps a server-graded result, so a quiz taken without the
  // immediate feedback still counts towards progress.
  function recordGraded(form) {
    for (const fs of form.querySelectorAll("fieldset.question")) {
      recordQuiz(fs.dataset.question, fs.classList.contains("right"));
    }
  }

  // ---- Flashcards ----

  const RATING_NAMES = { 1: "Again", 2: "Hard", 3: "Good", 4: "Easy" };
  const MAX_LOG = 500; // reviews kept in the log, newest last

  function pct(r) { return `${Math.round(r * 100)}%`; }

  // postJSON sends body to the server and returns its JSON reply, throwing
  // the server's own error message when it refuses.
  async function postJSON(url, body) {
    const res = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    const reply = await res.json();
    if (!res.ok) throw new Error(reply.error || `HTTP ${res.status}`);
    return reply;
  }

  function initDeck() {
    const deck = document.getElementById("deck");
    const data = document.getElementById("cards-data");
    if (!deck || !data) return;
    const cards = JSON.parse(data.textContent);
    const byID = new Map(cards.map((c) => [c.id, c]));
    const el = (id) => document.getElementById(id);
    const card = el("card");
    const ui = {
      due: el("due-count"), wrap: el("deck-card"), front: el("card-front"), back: el("card-back"),
      backFace: card.querySelector(".face.back"), ratings: el("ratings"), lesson: el("card-lesson"),
      done: el("deck-done"), nextDue: el("next-due"), error: el("deck-error"), recall: el("card-recall"),
      last: el("last-review"), log: el("review-log"), logCount: el("review-count"), logList: el("review-list"),
    };
    let current = null;
    let flipped = false;
    let busy = false;
    let timer = 0;
    // preview is what each rating would do to the card on screen, as the
    // server's scheduler worked it out when the answer was shown: {card,
    // now, options}. The review is sent with the same clock, so the
    // interval a button shows is the interval it gives.
    let preview = null;
    const PREVIEW_FRESH_MS = 10 * 60 * 1000;
    // recall is each reviewed card's predicted recall, as the server last
    // worked it out; the forgetting curve is not computed here.
    let recall = {};

    function fail(what, err) {
      ui.error.textContent = `${what}: ${err.message}`;
      ui.error.hidden = false;
    }

    // refresh asks the server to read the stored deck: it predicts each
    // card's recall now, and converts states saved under the old SM-2
    // scheduler, which are then stored in their FSRS form. The SM-2 states
    // are kept once under their own key, so nothing is lost.
    async function refresh() {
      const states = load(KEY_CARDS, {});
      if (Object.keys(states).length === 0) { recall = {}; return; }
      let reply;
      try {
        reply = await postJSON("/flashcards/states", { states, now: new Date().toISOString() });
      } catch (err) {
        fail("Could not read your saved progress", err);
        return;
      }
      recall = {};
      let converted = false;
      for (const [id, st] of Object.entries(reply.cards || {})) {
        if (st.recall !== undefined) recall[id] = st.recall;
        if (st.converted) converted = true;
      }
      if (converted) {
        if (load(KEY_CARDS_SM2, null) === null) save(KEY_CARDS_SM2, states);
        const next = {};
        for (const [id, st] of Object.entries(reply.cards)) next[id] = st.state;
        save(KEY_CARDS, next);
      }
    }

    function dueCards(now) {
      const states = load(KEY_CARDS, {});
      // Reviews that fell due come first, longest overdue first, before
      // new cards (in deck order): their predicted recall is falling.
      const dueAt = (c) => (states[c.id] && states[c.id].due ? Date.parse(states[c.id].due) : Infinity);
      return cards.filter((c) => isDue(states[c.id], now)).sort((a, b) => (dueAt(a) === dueAt(b) ? 0 : dueAt(a) < dueAt(b) ? -1 : 1));
    }

    function setFlipped(on) {
      flipped = on;
      ui.backFace.hidden = !on;
      ui.ratings.hidden = !on;
      ui.lesson.hidden = !on;
      card.classList.toggle("flipped", on);
      card.setAttribute("aria-expanded", String(on));
      if (on && current) loadPreview(current);
    }

    // loadPreview asks the server what each rating would do to c now and
    // writes it on the buttons ("Good · 2 days"). Until it answers, or if
    // it cannot, the buttons carry their names only.
    async function loadPreview(c) {
      if (preview && preview.card === c.id && Date.now() - preview.asked < PREVIEW_FRESH_MS) return;
      showIntervals(null);
      const asked = Date.now();
      let reply;
      try {
        reply = await postJSON("/flashcards/preview", { state: load(KEY_CARDS, {})[c.id] || {}, now: new Date(asked).toISOString() });
      } catch (err) {
        fail("Could not work out the intervals", err);
        return;
      }
      if (!current || current.id !== c.id) return; // the deck moved on meanwhile
      preview = { card: c.id, asked, now: reply.now, options: reply.options };
      showIntervals(reply.options);
    }

    function showIntervals(options) {
      for (const b of ui.ratings.querySelectorAll("button[data-rating]")) {
        const o = options && options.find((x) => String(x.rating) === b.dataset.rating);
        b.querySelector(".interval").textContent = o ? ` · ${o.interval}` : "";
      }
    }

    // recallOf is a reviewed card's predicted recall and due time in
    // words, or null for a new card.
    function recallOf(id, now) {
      const st = load(KEY_CARDS, {})[id];
      if (!st || !(id in recall)) return null;
      const due = Date.parse(st.due);
      return { pct: pct(recall[id]), when: due <= now ? "due now" : `due ${relative(due - now)}` };
    }

    function show() {
      clearTimeout(timer);
      const now = Date.now();
      const due = dueCards(now);
      ui.due.textContent = String(due.length);
      const dueIDs = new Set(due.map((c) => c.id));
      for (const c of cards) {
        const li = document.getElementById("card-" + c.id);
        if (!li) continue;
        li.classList.toggle("is-due", dueIDs.has(c.id));
        const p = li.querySelector("[data-recall-for]");
        const r = recallOf(c.id, now);
        p.hidden = !r;
        if (r) p.textContent = `Recall now ${r.pct} · ${r.when}`;
      }
      current = due[0] || null;
      if (!current || !preview || preview.card !== current.id) { preview = null; showIntervals(null); }
      ui.wrap.hidden = !current;
      ui.done.hidden = !!current;
      if (!current) { scheduleNext(now); return; }
      ui.front.textContent = current.front;
      ui.back.textContent = current.back;
      const r = recallOf(current.id, now);
      ui.recall.textContent = r ? `Predicted recall now: ${r.pct} (${r.when}).` : "New card: not reviewed yet.";
      const a = ui.lesson.querySelector("a");
      a.href = current.lessonURL;
      a.textContent = current.lessonTitle;
      setFlipped(false);
    }

    // scheduleNext says when the next card falls due and wakes the deck then.
    function scheduleNext(now) {
      const states = load(KEY_CARDS, {});
      const next = Math.min(...cards.map((c) => (states[c.id] && states[c.id].due ? Date.parse(states[c.id].due) : now)));
      ui.nextDue.textContent = relative(next - now);
      const wait = next - now;
      if (wait < 24 * 3600 * 1000) timer = setTimeout(() => refresh().then(show), Math.max(1000, wait + 250));
    }

    function showLog() {
      const log = load(KEY_REVIEWS, []);
      ui.log.hidden = log.length === 0;
      ui.logCount.textContent = String(log.length);
      ui.logList.replaceChildren(...log.slice(-20).reverse().map((e) => {
        const li = document.createElement("li");
        const c = byID.get(e.card);
        const before = e.recall === undefined ? "new card" : `recall was ${pct(e.recall)}`;
        li.textContent = `${when(Date.parse(e.at))} · ${c ? c.front : e.card} · ${RATING_NAMES[e.rating]} · ${before} · next ${e.interval ? "in " + e.interval + (e.interval === 1 ? " day" : " days") : "in a minute"}`;
        return li;
      }));
    }

    async function rate(rating) {
      if (!current || !flipped || busy) return;
      busy = true;
      const states = load(KEY_CARDS, {});
      const reviewed = current;
      // The clock of the preview the buttons show, while it is fresh, so
      // that the card gets exactly the interval its button said.
      const fresh = preview && preview.card === reviewed.id && Date.now() - preview.asked < PREVIEW_FRESH_MS;
      const at = fresh ? new Date(preview.now) : new Date();
      let reply;
      try {
        reply = await postJSON("/flashcards/review", { state: states[reviewed.id] || {}, rating, now: at.toISOString() });
      } catch (err) {
        fail("Could not schedule the card", err);
        return;
      } finally {
        busy = false;
      }
      ui.error.hidden = true;
      preview = null; // made for the state this review replaces
      states[reviewed.id] = reply.state;
      save(KEY_CARDS, states);
      const log = load(KEY_REVIEWS, []);
      log.push({
        card: reviewed.id, rating, at: at.toISOString(), recall: reply.recall,
        interval: reply.state.interval, due: reply.state.due,
        stability: reply.state.stability, difficulty: reply.state.difficulty,
      });
      save(KEY_REVIEWS, log.slice(-MAX_LOG));
      const due = Date.parse(reply.state.due);
      // Again is not scheduled by the forgetting curve: the card comes
      // back within the sitting, so no recall is predicted for it.
      ui.last.textContent = rating === 1
        ? `“${reviewed.front}”: Again. It comes back ${relative(due - Date.now())}, in this sitting, to be relearned.`
        : `“${reviewed.front}”: ${RATING_NAMES[rating]}. Next review ${relative(due - Date.now())}` +
          ` (${when(due)}), when its predicted recall will have fallen to ${pct(reply.recallAtDue)},` +
          " about the 90% the scheduler aims at (intervals are whole days).";
      ui.last.hidden = false;
      await refresh();
      showLog();
      show();
      card.focus();
    }

    card.addEventListener("click", () => { if (current) setFlipped(!flipped); });
    for (const b of ui.ratings.querySelectorAll("button[data-rating]")) {
      b.addEventListener("click", () => rate(Number(b.dataset.rating)));
    }
    // spaceFlipped: the last keydown was a Space that flipped the card.
    let spaceFlipped = false;
    document.addEventListener("keydown", (e) => {
      spaceFlipped = false;
      if (e.altKey || e.ctrlKey || e.metaKey || e.isComposing) return;
      const t = e.target;
      if (t instanceof HTMLElement && t.closest("input, textarea, select, [contenteditable]")) return;
      if (e.key === " ") {
        // On the card or another control, Space already clicks it.
        if (t instanceof HTMLElement && t.closest("button, a, summary")) return;
        if (!current) return;
        e.preventDefault();
        spaceFlipped = true;
        setFlipped(!flipped);
        return;
      }
      if (["1", "2", "3", "4"].includes(e.key) && flipped) {
        e.preventDefault();
        rate(Number(e.key));
      }
    });

    // Its keypress scrolls nothing either. A browser skips the keypress
    // of a keydown prevented, but input sent through the DevTools protocol
    // (the tests') delivers it, and the page then scrolled a screen down,
    // smoothly, under the next click (TestBrowserFlashcardsFlipRateAndRemember).
    document.addEventListener("keypress", (e) => { if (e.key === " " && spaceFlipped) e.preventDefault(); });

    refresh().then(() => {
      showLog();
      deck.hidden = false;
      show();
    });
  }

  // when is a moment as a short local date and time.
  function when(ms) {
    return new Date(ms).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
  }

  function relative(ms) {
    const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
    const mins = Math.round(ms / 60000);
    if (Math.abs(mins) < 60) return rtf.format(Math.max(mins, 1), "minute");
    const hours = Math.round(mins / 60);
    if (Math.abs(hours) < 24) return rtf.format(hours, "hour");
    return rtf.format(Math.round(hours / 24), "day");
  }

  showReadMarks();
  initProgress();
  initLesson();
  initQuiz();
  initDeck();
})();
