// roster.js: redraws the instructor's roster of learners every couple of
// seconds from /instructor/roster. Without it the page shows the roster as
// of its load; a reload shows it again.
"use strict";

(() => {
  const box = document.getElementById("roster-live");
  if (!box) return;
  const every = Number(box.dataset.every) || 2000;
  let last = box.innerHTML;
  async function refresh() {
    try {
      const res = await fetch(box.dataset.refresh, { credentials: "same-origin", headers: { Accept: "text/html" } });
      if (!res.ok) { box.dataset.refreshError = String(res.status); return; }
      const html = await res.text();
      delete box.dataset.refreshError;
      if (html === last) return;
      // Keep the keyboard where it was: a redraw must not drop the focus
      // off the Reset button the instructor is on.
      const focused = document.activeElement && box.contains(document.activeElement) ? document.activeElement.id : "";
      box.innerHTML = html;
      last = html;
      if (focused) document.getElementById(focused)?.focus();
    } catch { /* the next tick tries again */ }
    finally { box.dataset.refreshed = String(Date.now()); }
  }
  // Reset deletes a learner's Databases: ask once (the forms are redrawn,
  // so the listener sits on the box).
  box.addEventListener("submit", (e) => {
    const btn = e.target.querySelector("button[aria-label]");
    if (btn && !window.confirm(btn.getAttribute("aria-label") + "? Every Database in the namespace is deleted; snapshots and progress are kept.")) e.preventDefault();
  });
  setInterval(refresh, every);
})();
