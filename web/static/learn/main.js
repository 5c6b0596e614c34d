// main.js: enhancements for the course pages. Every page reads fine without
// script; with it, the quiz answers at once, the flashcards become a deck,
// and the learner's progress is kept in this browser's localStorage (the
// server keeps none). Grading and card scheduling are not done here: the
// page does not know the answers (POST /quiz/answer grades), and POST
// /flashcards/review and /flashcards/states run the Go FSRS-6 scheduler, so
// there is exactly one implementation of it.
//
// The modules, each about one page or one thing they share:
//   record.js  what this browser keeps: pages read, quiz results, card states
//   home.js    the home page's progress box
//   lesson.js  a lesson counts as read once its end was on screen
//   quiz.js    the quiz, graded one answer at a time by the server
//   deck.js    the flashcards' deck, scheduled by the server
//   post.js    asking the server (JSON in, JSON out)
//   format.js  times and percentages in words
import { showReadMarks } from "./record.js";
import { initProgress } from "./home.js";
import { initLesson } from "./lesson.js";
import { initQuiz } from "./quiz.js";
import { initDeck } from "./deck.js";

showReadMarks();
initProgress();
initLesson();
initQuiz();
initDeck();
