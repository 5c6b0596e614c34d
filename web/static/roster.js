// roster.js: keeps the instructor's roster of learners live. Every couple
// of seconds it fetches /instructor/roster and changes only what changed (a
// cell's text, a row that came or went), so a screen reader reading the
// table keeps its place, a selection stays, and the focused button keeps
// the focus. Reset is posted from here and answered at once; the learner's
// row then shows how far it got. Only what matters is said in the one
// polite live region: a reset started, refused or ended, never a routine
// redraw. Without script the page shows the roster as of its load, and
// Reset is a form post that comes back to the page.
"use strict";

(() => {
  const box = document.getElementById("roster-live");
  if (!box) return;
  const say = document.getElementById("roster-announce");
  const every = Number(box.dataset.every) || 2000;

  // announce says text once in the live region (and shows it above the
  // table); the same words twice in a row are said again.
  function announce(text) {
    if (!say) return;
    if (say.textContent === text) say.textContent = "";
    setTimeout(() => { say.textContent = text; }, 50);
  }

  // same tells whether node a can be kept as node b: the same kind of
  // node, and for elements the same tag and id (rows are keyed by id).
  function same(a, b) {
    if (!a || a.nodeType !== b.nodeType || a.nodeName !== b.nodeName) return false;
    return a.nodeType !== Node.ELEMENT_NODE || a.id === b.id;
  }

  // morphChildren makes from's children look like to's, keeping every node
  // that can be kept: a text node gets new text, an element new attributes
  // and children, and only what has no counterpart is added or removed.
  function morphChildren(from, to) {
    const want = [...to.childNodes];
    want.forEach((w, i) => {
      let have = from.childNodes[i];
      if (w.nodeType === Node.ELEMENT_NODE && w.id && !same(have, w)) {
        const moved = [...from.childNodes].slice(i).find((n) => same(n, w));
        if (moved) { from.insertBefore(moved, have); have = moved; }
      }
      if (!same(have, w)) { from.insertBefore(w, have || null); return; }
      morph(have, w);
    });
    while (from.childNodes.length > want.length) from.lastChild.remove();
  }

  function morph(from, to) {
    if (from.nodeType !== Node.ELEMENT_NODE) {
      if (from.nodeValue !== to.nodeValue) from.nodeValue = to.nodeValue;
      return;
    }
    for (const a of [...from.attributes]) if (!to.hasAttribute(a.name)) from.removeAttribute(a.name);
    for (const a of to.attributes) if (from.getAttribute(a.name) !== a.value) from.setAttribute(a.name, a.value);
    morphChildren(from, to);
  }

  // seen is each learner's latest reset as "seq:state": a new one is
  // announced, its progress within a state is not.
  const seen = new Map();
  // Several resets that changed in one redraw are said together: each
  // announce replaces the words before it.
  function noteResets(speak) {
    const said = [];
    for (const p of box.querySelectorAll(".reset-status")) {
      const row = p.closest("tr");
      if (!row) continue;
      const key = p.dataset.resetSeq + ":" + p.dataset.resetState;
      if (speak && seen.get(row.dataset.namespace) !== key) said.push(row.dataset.who + ": " + p.textContent.trim());
      seen.set(row.dataset.namespace, key);
    }
    if (said.length) announce(said.join(" "));
  }
  noteResets(false);

  let last = "", fetching = false, again = false;
  async function refresh() {
    if (fetching) { again = true; return; }
    fetching = true;
    try {
      const res = await fetch(box.dataset.refresh, { credentials: "same-origin", headers: { Accept: "text/html" } });
      if (!res.ok) { box.dataset.refreshError = String(res.status); return; }
      const html = await res.text();
      delete box.dataset.refreshError;
      if (html === last) return;
      last = html;
      const next = document.createElement("template");
      next.innerHTML = html;
      const focused = box.contains(document.activeElement) ? document.activeElement : null;
      morphChildren(box, next.content);
      // A row that moved was taken out of the page for a moment, which
      // drops its focus: give it back.
      if (focused && document.activeElement !== focused) (focused.isConnected ? focused : document.getElementById(focused.id))?.focus();
      noteResets(true);
    } catch { /* the next tick tries again */ }
    finally {
      box.dataset.refreshed = String(Date.now());
      fetching = false;
      if (again) { again = false; refresh(); }
    }
  }

  // Reset deletes a learner's Databases: ask once, post it, and say at
  // once that it runs (the forms are redrawn, so the listener sits on the
  // box). A reset already running is not posted again.
  box.addEventListener("submit", async (e) => {
    const form = e.target;
    // A data-plain form (removing the finalizers left) posts as HTML does.
    if (form.hasAttribute("data-plain")) return;
    const btn = form.querySelector("button[aria-label]");
    const row = form.closest("tr");
    if (!btn || !row) return;
    e.preventDefault();
    const who = row.dataset.who;
    if (btn.getAttribute("aria-disabled") === "true") {
      announce(who + ": a reset is already running; its row says how many Databases are left.");
      return;
    }
    if (!window.confirm("Reset " + who + "? Every Database in the namespace is deleted; snapshots and progress are kept.")) return;
    // The name starts with the words the button shows.
    const showBusy = (on) => {
      btn.textContent = on ? "Resetting…" : "Reset";
      btn.setAttribute("aria-label", btn.textContent + " " + who);
      if (on) btn.setAttribute("aria-disabled", "true"); else btn.removeAttribute("aria-disabled");
    };
    showBusy(true);
    try {
      const res = await fetch(form.action, { method: "POST", credentials: "same-origin", headers: { Accept: "application/json" } });
      const body = await res.json().catch(() => ({}));
      if (res.ok) {
        seen.set(row.dataset.namespace, body.seq + ":running");
        announce(who + ": " + body.message);
      } else {
        showBusy(false);
        announce(who + ": reset refused: " + (body.error || "oplab answered " + res.status));
      }
    } catch {
      showBusy(false);
      announce(who + ": reset not sent: oplab could not be reached.");
    }
    refresh();
  });
  setInterval(refresh, every);
})();
