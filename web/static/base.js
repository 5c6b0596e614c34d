// base.js: enhancements shared by every page, and what the other scripts
// import from it: h, clock, localize, store, tabStore. The layout loads it
// first, so it has run before any page's own script. Pages work without
// any script.
// localize shows every <time datetime> under root in the learner's own
// zone. The server writes times in UTC, the one zone it can be sure of;
// the browser knows the learner's.
//
// The formats are made once: toLocaleTimeString makes a new one at every
// call, and a lab reload drawing the past called it thousands of times
// (a quarter of the page's time). These are the formats those calls use.
const timeFormat = new Intl.DateTimeFormat([], { hour: "numeric", minute: "numeric", second: "numeric", hour12: false });
const fullFormat = new Intl.DateTimeFormat([], {
  year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric", second: "numeric", timeZoneName: "short",
});
// clock is a time of day in the learner's zone, "" for what is not one.
export function clock(d) {
  return isNaN(d) ? "" : timeFormat.format(d);
}
export function localize(root) {
  for (const el of (root || document).querySelectorAll("time[datetime]")) {
    const d = new Date(el.getAttribute("datetime"));
    if (isNaN(d)) continue;
    el.textContent = timeFormat.format(d);
    el.title = fullFormat.format(d);
  }
}

// A button with data-copy="ID" copies the text of the element ID.
function enableCopy(button) {
  const target = document.getElementById(button.dataset.copy);
  if (!target) return;
  button.hidden = false;
  const label = button.textContent;
  button.addEventListener("click", async () => {
    const text = target.textContent.trim();
    let ok = false;
    try {
      await navigator.clipboard.writeText(text);
      ok = true;
    } catch (err) {
      // Without the async clipboard (an insecure origin), select the text
      // so that Ctrl+C copies it.
      const range = document.createRange();
      range.selectNodeContents(target);
      const sel = getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      ok = document.execCommand && document.execCommand("copy");
    }
    button.textContent = ok ? "Copied" : "Selected: press Ctrl+C";
    setTimeout(() => { button.textContent = label; }, 2000);
  });
}

// h builds an element: h("p", {class: "note"}, "text", child). Text
// always goes in through text nodes, never as HTML; an attribute or a
// child that is null, undefined or false is left out, and an attribute
// that is true is set empty.
export function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

// storage is the one way the scripts keep things in the browser: JSON
// values (load, save) and plain text as typed (text, saveText). A
// browser may refuse storage (private mode, storage switched off, a full
// quota), and then a value lasts in memory for this page: scripts work
// the same, they only forget on reload. Memory holds only what storage
// refused, so a value another tab wrote is read from storage as it is.
function storage(area) {
  const memory = new Map();
  function raw(key) {
    if (memory.has(key)) return memory.get(key);
    try { return window[area].getItem(key); } catch { return null; }
  }
  function keep(key, value) {
    try {
      window[area].setItem(key, value);
      memory.delete(key);
    } catch {
      memory.set(key, value);
    }
  }
  return {
    // load returns the JSON value under key, or fallback when there is
    // none or it does not parse (written by an older or broken page).
    load(key, fallback) {
      const v = raw(key);
      if (v === null) return fallback;
      try { return JSON.parse(v); } catch { return fallback; }
    },
    save(key, value) { keep(key, JSON.stringify(value)); },
    // text returns the string under key, or null when there is none.
    text(key) { return raw(key); },
    saveText(key, value) { keep(key, String(value)); },
    remove(key) {
      memory.delete(key);
      try { window[area].removeItem(key); } catch { /* nothing stored */ }
    },
  };
}

// KEY names what the pages keep in localStorage, in one place, since pages
// read each other's (the progress report reads the quiz's and the
// challenges'). Each holds JSON but the name and the settings, text.
export const KEY = {
  name: "oplab.name",             // the learner's display name (store.text)
  scenarios: "oplab.scenarios",   // [scenario name, ...] seen through in the lab
  read: "oplab.read",             // [slug, ...] pages read to the end
  quiz: "oplab.quiz",             // {results: {id: bool}, best: n}
  cards: "oplab.cards",           // {id: State} as returned by the server (FSRS)
  reviews: "oplab.reviews",       // [{card, rating, at, recall, interval, due, ...}], newest last
  challenges: "oplab.challenges", // {ID: {tasks, done, of}} (challenges.js)
  // A page's own settings, as text:
  layout: "oplab.layout",         // the lab's layout: "focus" or ""
  projector: "oplab.projector",   // the lab's projector mode: "1" or ""
  rosterDetailed: "oplab.roster.detailed", // the roster's density: "1" or "0"
  goto: "oplab.goto",             // the last "send everyone" this browser followed
};

// store keeps what outlives the tab (progress, the name, the code);
// tabStore what belongs to this tab only (whom it follows).
export const store = storage("localStorage");
export const tabStore = storage("sessionStorage");

// whileShown stops a page's live socket when the page is left and starts it
// again when the page comes back from the back/forward cache. A cached page
// would otherwise keep its socket open, and every open one counts against
// the session's few streams: after some browsing, the lab's was refused.
export function whileShown(start, stop) {
  addEventListener("pagehide", stop);
  addEventListener("pageshow", (e) => { if (e.persisted) start(); });
}

document.addEventListener("DOMContentLoaded", () => {
  localize(document);
  document.querySelectorAll("button[data-copy]").forEach(enableCopy);
});
