// The code page: a textarea with line numbers, Tab indenting and the
// error's line marked; Run my code / Back to oplab's controller; the code
// kept in localStorage and in the session. No framework, no build step.
import { store, h } from "./base.js";

(function () {
  const root = document.getElementById("code");
  if (!root) return;
  const src = document.getElementById("source");
  const gutter = document.getElementById("gutter");
  const state = document.getElementById("code-state");
  const errBox = document.getElementById("code-error");
  const runBtn = document.getElementById("run");
  const backBtn = document.getElementById("back");
  const key = "oplab.code." + root.dataset.namespace;
  // badLines are the lines the shown errors are on, marked in the gutter.
  let badLines = new Set();
  let escaped = false;
  let runsPressed = 0;

  // The browser's copy wins over the session's when it is newer work; code
  // just loaded from a replayed export wins over both, and is kept.
  if (root.dataset.imported === "true") {
    store.saveText(key, src.value);
  } else {
    const kept = store.text(key);
    if (kept) src.value = kept;
  }

  function drawGutter() {
    const n = src.value.split("\n").length;
    let html = "";
    for (let i = 1; i <= n; i++) {
      html += (badLines.has(i) ? '<span class="bad">' + i + "</span>" : String(i)) + "\n";
    }
    gutter.innerHTML = html;
    gutter.scrollTop = src.scrollTop;
  }

  let saveTimer = 0;
  function keep() {
    store.saveText(key, src.value);
    clearTimeout(saveTimer);
    saveTimer = setTimeout(() => post("/code/save", { source: src.value }).catch(() => {}), 1000);
  }

  function post(url, body) {
    return fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json" }, body: JSON.stringify(body || {}),
    });
  }

  // errorText is a refusal's words: a JSON answer's error, or the text.
  async function errorText(res) {
    const t = await res.text();
    try { return JSON.parse(t).error || t; } catch (_) { return t; }
  }

  function lineStart(n) {
    const lines = src.value.split("\n");
    let pos = 0;
    for (let i = 0; i < n - 1 && i < lines.length; i++) pos += lines[i].length + 1;
    return pos;
  }

  function goToLine(n) {
    const start = lineStart(n);
    const end = src.value.indexOf("\n", start);
    src.focus();
    src.setSelectionRange(start, end < 0 ? src.value.length : end);
    const lh = parseFloat(getComputedStyle(src).lineHeight) || 18;
    src.scrollTop = Math.max(0, (n - 5) * lh);
    drawGutter();
  }

  // showError shows a failure of the code: one (a panic, an overrun, a
  // returned error) or every error of a compile, each with a link to its
  // line, which the gutter marks.
  function showError(e) {
    errBox.textContent = "";
    badLines = new Set();
    if (e) {
      const label = { compile: "Compile error", panic: "Panic", error: "Reconcile returned an error",
        deadline: "Stopped", budget: "Over its budget", crash: "The sandbox died" }[e.kind] || "Error";
      const all = e.errors && e.errors.length > 1 ? e.errors : [e];
      if (all.length > 1) errBox.append(h("p", {}, `Compile errors, ${all.length} of them, as go build lists them:`));
      const items = all.map((x) => {
        if (!x.line) return h("p", {}, label + ": " + x.message);
        badLines.add(x.line);
        const a = h("a", { href: "#source" }, "line " + x.line + (x.col ? ":" + x.col : ""));
        a.addEventListener("click", (ev) => { ev.preventDefault(); goToLine(x.line); });
        return h(all.length > 1 ? "li" : "p", {}, all.length > 1 ? "" : label + " at ", a, ": " + x.message);
      });
      errBox.append(all.length > 1 ? h("ol", { class: "errors" }, items) : items[0]);
    }
    drawGutter();
  }

  // The kernel's fence around the child that runs the code, as the
  // server read it from the child.
  function showFence(words) {
    if (words) document.getElementById("code-fence").textContent = words;
  }

  function setRunning(running) {
    root.dataset.running = String(running);
    state.textContent = running ? "Your code reconciles this namespace." : "oplab's controller reconciles this namespace.";
  }

  src.addEventListener("input", () => { drawGutter(); keep(); });
  src.addEventListener("scroll", () => { gutter.scrollTop = src.scrollTop; });
  src.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") { escaped = true; return; }
    if (ev.key !== "Tab" || escaped || ev.ctrlKey || ev.metaKey || ev.altKey) { escaped = false; return; }
    ev.preventDefault();
    const s = src.selectionStart, e = src.selectionEnd, v = src.value;
    const from = v.lastIndexOf("\n", s - 1) + 1;
    if (s === e && !ev.shiftKey) {
      src.setRangeText("\t", s, e, "end");
    } else {
      const block = v.slice(from, e);
      const out = ev.shiftKey ? block.replace(/^\t/gm, "") : block.replace(/^/gm, "\t");
      src.setRangeText(out, from, e, "select");
    }
    drawGutter();
    keep();
  });

  document.getElementById("load").addEventListener("click", async () => {
    const id = document.getElementById("starter").value;
    const res = await fetch("/code/starters/" + encodeURIComponent(id));
    if (!res.ok) { errBox.textContent = await res.text(); return; }
    src.value = await res.text();
    heldError = null;
    showError(null);
    keep();
  });

  runBtn.addEventListener("click", async () => {
    state.textContent = "Compiling…";
    runBtn.disabled = true;
    runsPressed++;
    try {
      const res = await post("/code/run", { source: src.value });
      if (!res.ok) { showError({ kind: "error", message: await errorText(res) }); setRunning(root.dataset.running === "true"); return; }
      const v = await res.json();
      setRunning(v.running);
      showFence(v.fence);
      showError(v.error);
      heldError = v.error || null;
      if (!v.error) lastRuns = 0;
      else if (v.running) state.textContent = "Your code from before still reconciles this namespace: this version did not compile.";
    } finally {
      runBtn.disabled = false;
    }
  });

  backBtn.addEventListener("click", async () => {
    const res = await post("/code/back");
    if (res.ok) { heldError = null; showError(null); setRunning(false); }
  });

  // While the code runs, its last reconcile's failure (panic, overrun,
  // returned error) is shown and its line marked. A poll asked before Run
  // was pressed answers for the code that ran before: it would show that
  // code's error under the new code, so its answer is dropped.
  let lastRuns = -1;
  // heldError is the compile error of the last Run: the code from before
  // runs on, and its failures must not take the place of this error under
  // the new code's lines, until the next Run, Load or Back.
  let heldError = null;
  async function poll() {
    if (document.hidden) return;
    const asked = runsPressed;
    try {
      const res = await fetch("/code/status", { credentials: "same-origin" });
      if (!res.ok) return;
      const v = await res.json();
      showFence(v.fence);
      if (asked !== runsPressed || runBtn.disabled || heldError) return;
      setRunning(v.running);
      if (v.running && v.runs !== lastRuns) {
        lastRuns = v.runs;
        showError(v.error);
      }
    } catch (_) { /* offline for a moment: the next poll tries again */ }
  }
  setInterval(poll, 1500);
  drawGutter();
  setupTest();

  // ---- Test my code ------------------------------------------------------
  // POST /code/test starts the tester on the editor's code (a compile
  // error comes back as Run's does); GET /code/test is polled while it
  // runs, and its verdict drawn: passed with the schedules explored, or
  // each finding with its pattern, what the tester did, what went wrong in
  // the course's words, the lesson, and its schedule to open in the lab.
  function setupTest() {
    const btn = document.getElementById("test");
    const out = document.getElementById("code-test-result");
    if (!btn || !out) return;
    let timer = 0;
    const say = (...kids) => out.replaceChildren(...kids);
    async function check() {
      let v;
      try {
        const res = await fetch("/code/test", { credentials: "same-origin", headers: { Accept: "application/json" } });
        if (!res.ok) return;
        v = await res.json();
      } catch (_) { return; }
      draw(v);
      clearTimeout(timer);
      if (v.state === "running") timer = setTimeout(check, 1000);
      btn.disabled = v.state === "running";
    }
    function draw(v) {
      if (v.state === "none") { say(); return; }
      if (v.state === "running") {
        const p = v.progress || {};
        say(h("p", { class: "test-running", role: "status" },
          p.of ? `Testing… ${p.done} of ${p.of} schedules run.` : "Testing… the ordinary life first: its end states are what every other schedule must reach."));
        return;
      }
      if (v.state === "failed") { say(h("p", { class: "error" }, "The test did not finish: " + v.error)); return; }
      const secs = ((v.tookMs || 0) / 1000).toFixed(1);
      if (v.passed) {
        say(h("p", { class: "test-passed" }, h("span", { class: "pill ok" }, "passed"),
          ` every one of ${v.schedules} schedules converged to the ordinary life's end state, within its budgets (${secs} s).`));
        return;
      }
      say(h("p", { class: "test-failed" }, h("span", { class: "pill bad" }, "failed"),
          ` ${v.findings.length} finding${v.findings.length === 1 ? "" : "s"} in ${v.schedules} schedule${v.schedules === 1 ? "" : "s"} (${secs} s)` +
          (v.schedules === 1 ? ": the ordinary life must converge before the faults are tried." : ":")),
        h("ol", { class: "findings" }, v.findings.map(finding)));
    }
    function finding(f) {
      return h("li", { class: "finding" },
        h("p", {}, h("span", { class: "pill warn" }, f.pattern), " ", h("b", {}, f.perturbation)),
        h("p", {}, f.message + (f.also ? ` (and ${f.also} more schedule${f.also === 1 ? "" : "s"} the same way)` : "")),
        h("p", { class: "small" },
          f.lesson ? h("a", { href: f.lesson }, "Read why in the lesson") : "",
          f.lesson ? " · " : "",
          h("form", { method: "post", action: "/lab/replay/test/" + f.schedule, class: "inline" },
            h("button", { type: "submit" }, `Open schedule ${f.schedule} in the lab, step ${f.step} marked`))));
    }
    btn.addEventListener("click", async () => {
      btn.disabled = true;
      keep();
      heldError = null;
      showError(null);
      say(h("p", { role: "status" }, "Compiling…"));
      try {
        const res = await post("/code/test", { source: src.value });
        const v = await res.json().catch(() => ({}));
        if (res.status === 200 && v.error) { showError(v.error); heldError = v.error; say(); btn.disabled = false; return; }
        if (!res.ok && res.status !== 202) { say(h("p", { class: "error" }, v.error || "The test could not start.")); btn.disabled = false; return; }
        draw(v);
        timer = setTimeout(check, 1000);
      } catch (_) {
        say(h("p", { class: "error" }, "The test could not start: is oplab still running?"));
        btn.disabled = false;
      }
    });
    check();
  }
})();
