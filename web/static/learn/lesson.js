// lesson.js: a lesson page counts as read once its end (the footer after
// its text) has been on screen. Opening a long page is not reading it:
// only the short ones show their end at once. The footer says when the
// page has counted, so the home page's "Pages read to the end" holds no
// surprise.
import { markRead, readSlugs } from "./record.js";

export function initLesson() {
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
