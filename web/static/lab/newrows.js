// newrows.js: the timeline's newest rows kept in view. Rows that come
// while the learner reads further down are counted at the top of the
// timeline, one press away; on a narrow screen the timeline is a strip at
// the bottom of the screen (lab.css) that opens to the whole of it.
import { h } from "../base.js";
import { $ } from "./dom.js";

// news counts the rows that came while the learner was not looking at the
// newest: scrolled down inside the timeline, or, on a narrow screen, with
// the timeline closed. A button at the top of the rows says how many and
// brings them up; the learner's place is kept meanwhile (the browser's
// scroll anchoring keeps the row they read where it is).
const news = (() => {
  const log = $("#log");
  const button = $("#log-new");
  let count = 0;
  function draw() {
    if (!button) return;
    button.hidden = count === 0;
    button.replaceChildren(`${count} new above`, h("span", { "aria-hidden": "true" }, " ↑"));
  }
  function away() { return !!log && log.scrollTop > 8; }
  function setup() {
    if (!log || !button) return;
    log.addEventListener("scroll", () => { if (!away()) { count = 0; draw(); } }, { passive: true });
    button.addEventListener("click", () => {
      log.scrollTo({ top: 0 });
      count = 0;
      draw();
      log.focus({ preventScroll: true });
    });
  }
  // Only rows of what happens now count as new, not the past a reload draws.
  return { setup, added(live) { if (live && away()) { count++; draw(); } } };
})();

// noteAdded counts a row just added to the timeline (timeline.js).
export function noteAdded(live) { news.added(live); }

// drawer is the timeline on a narrow screen: a strip at the bottom of the
// screen with its newest rows, whatever the page shows above it, which
// opens to the whole timeline (lab.css draws it so below 60rem).
const drawer = (() => {
  const section = $(".lab-grid > .timeline");
  const button = $("#timeline-open");
  function setup() {
    if (!section || !button) return;
    button.hidden = false;
    button.addEventListener("click", () => {
      const open = section.dataset.drawer !== "open";
      section.dataset.drawer = open ? "open" : "";
      button.setAttribute("aria-expanded", String(open));
      button.textContent = open ? "Close timeline" : "Open timeline";
    });
  }
  return { setup };
})();
export function setupJump() {
  news.setup();
  drawer.setup();
}

