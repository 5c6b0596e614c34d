// terminal.js: kubectl in the page. Each command goes to /lab/kubectl,
// which runs kubectl's own code as the learner's ServiceAccount in a
// process of its own (web/kubectl); what kubectl prints comes back as it
// prints it, and a last line says how it ended. One command at a time:
// Stop ends the one running. The up and down arrows go through the
// commands sent in this tab.
import { h, tabStore } from "../base.js";
import { $ } from "./dom.js";

const MARK = "\x1e"; // kubectl.ResultMark: the end line's start
const KEEP = 200_000; // characters of output the page keeps
const HISTORY = "oplab.terminal.history";

export function setupTerminal() {
  const form = $("#term-form");
  if (!form) return;
  const out = $("#term-out");
  const line = $("#term-line");
  const run = $("#term-run");
  const stop = $("#term-stop");
  const status = $("#term-status");
  const stdin = $("#term-stdin");
  const history = tabStore.load(HISTORY, []);
  let back = history.length;
  let abort = null;

  function print(text, cls) {
    out.append(cls ? h("span", { class: cls }, text) : text);
    // The oldest output goes first once the page keeps too much.
    while (out.textContent.length > KEEP && out.firstChild) out.firstChild.remove();
    out.scrollTop = out.scrollHeight;
  }
  function busy(on) {
    run.disabled = on;
    stop.disabled = !on;
    line.readOnly = on;
  }

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const command = line.value.trim();
    if (!command || abort) return;
    history.push(command);
    tabStore.save(HISTORY, history.slice(-50));
    back = history.length;
    print(`$ ${command}\n`, "term-cmd");
    busy(true);
    status.textContent = "Running…";
    abort = new AbortController();
    let text = "";
    try {
      const resp = await fetch("/lab/kubectl", {
        method: "POST", credentials: "same-origin", signal: abort.signal,
        body: new URLSearchParams({ command, stdin: stdin ? stdin.value : "" }),
      });
      if (!resp.ok || !resp.body) {
        const why = (await resp.text()).trim();
        print(why + "\n", "term-refused");
        status.textContent = resp.status === 429 || resp.status === 409 ? why : `Not run (${resp.status}).`;
        return;
      }
      const reader = resp.body.getReader();
      const dec = new TextDecoder();
      let shown = 0;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += dec.decode(value, { stream: true });
        // Print all but what may be the end line, as it comes.
        const mark = text.lastIndexOf(MARK);
        const upTo = mark >= 0 ? mark : text.length;
        if (upTo > shown) { print(text.slice(shown, upTo)); shown = upTo; }
      }
      const mark = text.lastIndexOf(MARK);
      if (mark < 0) { print(text.slice(shown)); status.textContent = "The answer ended early."; return; }
      const res = JSON.parse(text.slice(mark + 1));
      if (text.slice(0, mark) && !text.slice(0, mark).endsWith("\n")) print("\n");
      status.textContent = res.note ? res.note + "." : `kubectl exited with status ${res.exit}.`;
      if (res.note) print(`[${res.note}]\n`, "term-note");
    } catch (err) {
      status.textContent = err.name === "AbortError" ? "Stopped." : "The request failed: " + err.message;
      if (err.name === "AbortError") print("[stopped]\n", "term-note");
    } finally {
      abort = null;
      busy(false);
      line.focus();
    }
  });
  stop.addEventListener("click", () => { if (abort) abort.abort(); });
  line.addEventListener("keydown", (e) => {
    if (e.key !== "ArrowUp" && e.key !== "ArrowDown") return;
    if (!history.length) return;
    e.preventDefault();
    back = Math.max(0, Math.min(history.length, back + (e.key === "ArrowUp" ? -1 : 1)));
    line.value = history[back] || "";
  });
}
