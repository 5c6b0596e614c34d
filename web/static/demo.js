// demo.js keeps the instructor's scripted-demo panel current while a demo
// is under way: once a second it fetches the panel, rendered on the server
// by the same templ component as the page, and swaps it in when it
// changed. Without this script the panel shows the state as of page load
// and each button still works (forms post and redirect back).
(() => {
  "use strict";
  let last = "";
  async function tick() {
    const el = document.getElementById("demo");
    if (!el || el.dataset.active !== "true") return; // nothing under way: stop polling
    try {
      const res = await fetch("/instructor/demo", { credentials: "same-origin", cache: "no-store" });
      if (res.ok) {
        const html = await res.text();
        if (html !== last) {
          last = html;
          const t = document.createElement("template");
          t.innerHTML = html.trim();
          const fresh = t.content.getElementById("demo");
          if (fresh) swap(el, fresh);
        }
      }
    } catch (_) {
      // A dropped request is retried on the next tick.
    }
    setTimeout(tick, 1000);
  }
  // swap replaces the panel's contents, keeping the live narration element
  // (so a screen reader announces its new text) and the focused button.
  function swap(el, fresh) {
    const focused = document.activeElement && document.activeElement.closest("#demo form")?.getAttribute("action");
    const oldSay = el.querySelector("#demo-narration");
    const newSay = fresh.querySelector("#demo-narration");
    if (oldSay && newSay) {
      if (oldSay.textContent !== newSay.textContent) oldSay.textContent = newSay.textContent;
      newSay.replaceWith(oldSay);
    }
    el.dataset.active = fresh.dataset.active;
    el.replaceChildren(...fresh.childNodes);
    if (focused) el.querySelector(`form[action="${focused}"] button`)?.focus();
  }
  setTimeout(tick, 1000);
})();
