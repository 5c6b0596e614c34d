// demo.js keeps the instructor's scripted-demo panel current while a demo
// is under way: once a second it fetches the panel, rendered on the server
// by the same templ component as the page, and morphs the panel into it
// when it changed (morph.js keeps every node it can: the narration, a live
// region, gets its new text and is read out; a focused button stays
// focused, the Pause that became Play included). Without this script the
// panel shows the state as of page load and each button still works (forms
// post and redirect back).
import { morph, parse } from "./morph.js";

let last = ""; // the panel's HTML as last fetched

async function tick() {
  const el = document.getElementById("demo");
  if (!el || el.dataset.active !== "true") return; // nothing under way: stop polling
  try {
    const res = await fetch("/instructor/demo", { credentials: "same-origin", cache: "no-store" });
    if (res.ok) {
      const html = await res.text();
      if (html !== last) {
        last = html;
        const fresh = parse(html).getElementById("demo");
        if (fresh) morph(el, fresh);
      }
    }
  } catch (_) {
    // A dropped request is retried on the next tick.
  }
  setTimeout(tick, 1000);
}

setTimeout(tick, 1000);
