// quiz.js: the quiz, one answer at a time. The server alone knows the
// correct choices (the page does not carry them): each answer is sent to
// POST /quiz/answer, which grades it and explains. Without script, the
// form is graded whole on the server, and that result is recorded too. The
// answers picked are kept, so a reload shows them again (graded again by
// the server) until the learner starts afresh or retries what they missed.
import { h } from "../base.js";
import { recordQuiz, pickedAnswers, forgetPicks } from "./record.js";
import { postJSON } from "./post.js";

// quiz is this page's quiz: the verdicts so far (question → right), the
// questions whose answer is on its way to the server, and the live score.
const quiz = { answered: {}, checking: new Set(), live: null };

export function initQuiz() {
  const form = document.getElementById("quiz-form");
  if (!form) return;
  document.addEventListener("click", startAfresh);
  if (document.getElementById("quiz-result")) { recordGraded(form); return; }

  quiz.live = document.getElementById("quiz-live");
  quiz.live.hidden = false;
  for (const fs of form.querySelectorAll("fieldset.question")) {
    const inputs = [...fs.querySelectorAll("input")];
    const btn = fs.querySelector("button.check");
    const grade = () => check(fs, inputs);
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
  restore(form);
}

// restore shows again the answers this browser kept, each graded again by
// the server (the page does not know the answers).
function restore(form) {
  const picked = pickedAnswers();
  for (const fs of form.querySelectorAll("fieldset.question")) {
    const choices = picked[fs.dataset.question];
    if (!Array.isArray(choices) || choices.length === 0) continue;
    const inputs = [...fs.querySelectorAll("input")];
    for (const input of inputs) input.checked = choices.includes(Number(input.value));
    check(fs, inputs);
  }
}

// startAfresh forgets the kept answers of the questions a link starts
// again: "Retry the missed" and "Start again" name theirs (?only=), the
// whole quiz's links all of them. The nav's Quiz link keeps them.
function startAfresh(e) {
  const a = e.target instanceof Element && e.target.closest("a.quiz-restart, a[data-live=retry], #quiz-result a");
  if (!a) return;
  const url = new URL(a.href, window.location.href);
  if (url.pathname !== "/quiz") return;
  const only = url.searchParams.get("only");
  forgetPicks(only ? only.split(",").map((id) => id.trim()).filter(Boolean) : []);
}

// check sends one answer to the server and shows its verdict.
async function check(fs, inputs) {
  const id = fs.dataset.question;
  const picked = inputs.filter((i) => i.checked).map((i) => Number(i.value)).sort((a, b) => a - b);
  if (picked.length === 0 || quiz.checking.has(id) || id in quiz.answered) return;
  quiz.checking.add(id);
  const feedback = fs.querySelector(".feedback");
  const v = feedback.querySelector(".verdict");
  let verdict;
  try {
    // The attempt is this visit's choice order: the server counts a
    // question's first answer in each attempt for the instructor.
    const order = fs.form && fs.form.elements.namedItem("order");
    verdict = await postJSON("/quiz/answer", { question: id, choices: picked, attempt: order ? order.value : "" });
  } catch (err) {
    v.textContent = "Could not check this answer: " + err.message;
    v.className = "verdict error";
    feedback.hidden = false;
    return;
  } finally {
    quiz.checking.delete(id);
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
  v.className = "verdict";
  v.replaceChildren(ok ? h("b", { class: "ok" }, "Right.") : h("b", { class: "error" }, "Not quite."));
  feedback.querySelector(".explanation").textContent = verdict.explanation;
  feedback.hidden = false;

  quiz.answered[id] = ok;
  recordQuiz(id, ok, picked);
  showScore();
}

function showScore() {
  const ids = Object.keys(quiz.answered);
  const missed = ids.filter((id) => !quiz.answered[id]);
  const live = quiz.live;
  live.querySelector('[data-live="score"]').textContent = String(ids.length - missed.length);
  live.querySelector('[data-live="answered"]').textContent = String(ids.length);
  const retry = live.querySelector('[data-live="retry"]');
  retry.hidden = missed.length === 0;
  retry.href = "/quiz?only=" + encodeURIComponent(missed.join(","));
  retry.textContent = `Retry the ${missed.length} missed`;
  live.querySelector('[data-live="restart"]').hidden = ids.length === 0;
}

// recordGraded keeps a server-graded result, so a quiz taken without the
// immediate feedback still counts towards progress.
function recordGraded(form) {
  for (const fs of form.querySelectorAll("fieldset.question")) {
    recordQuiz(fs.dataset.question, fs.classList.contains("right"));
  }
}
