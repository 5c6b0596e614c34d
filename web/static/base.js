// base.js: enhancements shared by every page. Pages work without it.
"use strict";
(function () {
  // localize shows every <time datetime> under root in the learner's own
  // zone. The server writes times in UTC, the one zone it can be sure of;
  // the browser knows the learner's.
  function localize(root) {
    for (const el of (root || document).querySelectorAll("time[datetime]")) {
      const d = new Date(el.getAttribute("datetime"));
      if (isNaN(d)) continue;
      el.textContent = d.toLocaleTimeString([], { hour12: false });
      el.title = d.toLocaleString([], { timeZoneName: "short" });
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

  window.oplab = { localize };
  document.addEventListener("DOMContentLoaded", () => {
    localize(document);
    document.querySelectorAll("button[data-copy]").forEach(enableCopy);
  });
})();
