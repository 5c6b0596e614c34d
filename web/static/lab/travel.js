// travel.js: time travel on the lab's timeline. A row's Time travel button
// (or a click on the row) opens a panel with the learner's objects as they were
// right after that row's last step, as the controller's watches had
// delivered them, each with what changed from its previous version. "Compare"
// picks a second row and shows what changed between the two. The server
// rebuilds the objects (/lab/history, /lab/history/diff; on a replay,
// /lab/replay/history from the uploaded file's history); this file only
// asks and draws, every object's text as text. The lab (lab/timeline.js)
// puts the seq of each row's last step on the row (data-seq); nothing else
// here depends on the lab's other modules.
import { h } from "../base.js";

// setupTravel opens time travel on a learner's own live lab or a replay
// whose file carries its history; elsewhere it does nothing.
export function setupTravel() {
  const root = document.getElementById("lab");
  const rowsEl = document.getElementById("rows");
  // A learner's own live lab, or a replay whose file carries its history
  // (data-travel: the id the server keeps it under, /lab/replay/history);
  // a followed presenter's rows are not the steps of this namespace's
  // history.
  if (!root || !rowsEl || root.dataset.look) return;
  const replay = root.dataset.mode === "replay" && root.dataset.travel ? root.dataset.travel : "";
  if (root.dataset.mode !== "live" && !replay) return;
  const ns = root.dataset.namespace || "";
  const base = replay ? "/lab/replay/history" : "/lab/history";
  root.classList.add("travel-on");

  // ---- the panel ------------------------------------------------------------
  const heading = h("h2", { id: "travel-h", tabindex: "-1" }, "Objects at a step");
  const close = h("button", { type: "button", class: "travel-close" }, "Close");
  const all = h("input", { type: "checkbox", id: "travel-all" });
  const compare = h("button", { type: "button", id: "travel-compare", "aria-pressed": "false" }, "Compare with another row");
  const status = h("p", { class: "travel-status small", role: "status" });
  const explain = h("p", { class: "muted small" });
  const objects = h("div", { class: "travel-objects" });
  const panel = h("aside", { id: "travel", class: "travel", "aria-labelledby": "travel-h", hidden: "" },
    h("div", { class: "travel-head" }, heading, close),
    explain,
    h("div", { class: "travel-tools" },
      h("label", { class: "small" }, all, " Show resourceVersion, managedFields and timestamps"),
      compare),
    status, objects);
  document.body.append(panel);

  // what the panel shows: {seq} or {from, to}; the row it was opened from.
  let view = null;
  let opener = null;
  let picking = false;

  function rowOf(el) { return el && el.closest && el.closest("#rows li[data-seq]"); }
  function seqOf(row) { return Number(row.dataset.seq) || 0; }

  function mark() {
    document.querySelectorAll("#rows li.travel-picked").forEach((li) => {
      li.classList.remove("travel-picked");
      li.removeAttribute("aria-current");
    });
    if (!view) return;
    const seqs = view.seq ? [view.seq] : [view.from, view.to];
    for (const s of seqs) {
      const li = rowsEl.querySelector(`li[data-seq="${s}"]`);
      if (li) { li.classList.add("travel-picked"); li.setAttribute("aria-current", "true"); }
    }
  }

  async function load() {
    const q = new URLSearchParams(replay ? { replay } : { namespace: ns });
    if (all.checked) q.set("all", "1");
    let url;
    if (view.seq) {
      q.set("at", String(view.seq));
      url = base + "?" + q;
      heading.textContent = `Objects after step ${view.seq}`;
      explain.textContent = "As the controller's watches had delivered them when the row's last step ran. Each change is from the object's previous version.";
    } else {
      q.set("from", String(view.from));
      q.set("to", String(view.to));
      url = base + "/diff?" + q;
      heading.textContent = `Changes from step ${view.from} to step ${view.to}`;
      explain.textContent = `Each object as the controller had seen it after step ${view.from}, then after step ${view.to}.`;
    }
    // Nothing of the last answer stays under the new heading.
    status.textContent = "Loading…";
    objects.replaceChildren();
    panel.setAttribute("aria-busy", "true");
    const asked = JSON.stringify(view) + all.checked;
    let body;
    try {
      const resp = await fetch(url, { headers: { Accept: "application/json" } });
      // A proxy's own error page is HTML: say its status, not a JSON parse error.
      if (!(resp.headers.get("Content-Type") || "").includes("application/json")) throw new Error(`${resp.status} ${resp.statusText}`);
      body = await resp.json();
      if (!resp.ok) throw new Error(body.error || resp.statusText);
    } catch (err) {
      if (asked !== JSON.stringify(view) + all.checked) return;
      status.textContent = "Could not load the objects: " + err.message;
      panel.setAttribute("aria-busy", "false");
      return;
    }
    if (asked !== JSON.stringify(view) + all.checked) return; // asked again meanwhile
    draw(body);
    panel.setAttribute("aria-busy", "false");
  }

  // A value that was not there reads "(none)", neither struck out nor new.
  function value(tag, text, absent) {
    return absent ? h("span", { class: "muted" }, "(none)") : h(tag, {}, text === "" ? '""' : text);
  }

  function changeLine(c) {
    return h("li", {},
      h("code", { class: "field" }, c.field), " ",
      value("del", c.from, c.fromAbsent), " → ", value("ins", c.to, c.toAbsent));
  }

  const stateWords = {
    new: "first version kept", changed: "changed", same: "unchanged",
    created: "created in between", deleted: "deleted in between",
  };

  function sameWords() {
    if (view && !view.seq) return "No change between the two steps" + (all.checked ? "." : " (resourceVersion, managedFields and timestamps not compared).");
    return all.checked ? "No change from its previous version." :
      "No change from its previous version but in resourceVersion, managedFields or timestamps.";
  }

  function objectCard(o) {
    const changes = o.changes || [];
    const shown = o.state === "created" || o.state === "new" ? [] : changes;
    return h("section", { class: `travel-obj ${o.state}` },
      h("h3", {},
        h("span", { class: "kind" }, o.kind), " ", o.name, " ",
        h("span", { class: `pill small ${o.state === "changed" || o.state === "deleted" ? "warn" : ""}` }, stateWords[o.state] || o.state),
        o.event && view && view.seq ? h("span", { class: "muted small" }, ` from its ${o.event} event`) : ""),
      shown.length ? h("ul", { class: "changes" }, shown.map(changeLine))
        : h("p", { class: "muted small" }, o.state === "same" ? sameWords() :
          o.state === "new" ? "The first version the history keeps: nothing to compare it with." : ""),
      o.object ? h("details", { class: "whole" },
        h("summary", {}, "The whole object"),
        // It may scroll sideways: focusable, so the keyboard can.
        h("pre", { tabindex: "0", "aria-label": `The whole ${o.kind} ${o.name}` }, JSON.stringify(o.object, null, 2))) : "");
  }

  function draw(body) {
    const list = body.objects || [];
    const changed = list.filter((o) => o.state === "changed" || o.state === "created" || o.state === "deleted").length;
    let text = list.length ? `${list.length} object${list.length > 1 ? "s" : ""}, ${changed} with changes.` :
      "No objects: nothing of this lab had been seen by then.";
    if (body.partial) text += " The history's size bound dropped older versions: some objects may be missing.";
    status.textContent = text;
    objects.replaceChildren(...list.map(objectCard));
  }

  function open(next, from) {
    view = next;
    if (from) opener = from;
    panel.hidden = false;
    document.body.classList.add("travel-open");
    mark();
    heading.focus();
    load();
  }

  function shut() {
    panel.hidden = true;
    document.body.classList.remove("travel-open");
    view = null;
    setPicking(false);
    mark();
    if (opener && opener.isConnected) opener.focus();
  }

  function setPicking(p) {
    picking = p;
    // While picking, the panel shrinks to its head and tools, so that the
    // rows it would cover (all of them, on a phone) can be clicked.
    panel.classList.toggle("picking", p);
    compare.setAttribute("aria-pressed", String(p));
    compare.textContent = p ? "Pick a row… (cancel)" : "Compare with another row";
    if (p) status.textContent = "Click the other row to compare with (or press Enter on it).";
  }

  // choose is a row picked by its button or a click: the objects after it,
  // or, while picking, the comparison between it and the row shown. The
  // focus goes back to the row's button when the panel closes.
  function choose(row) {
    const seq = seqOf(row);
    const from = row.querySelector("button.travel-here") || row;
    // Following the presenter, the rows are the presenter's steps, not
    // this namespace's: its history would show other objects than theirs.
    if (!seq || root.dataset.following) return;
    if (picking && view) {
      const first = view.seq || view.to;
      setPicking(false);
      open({ from: Math.min(first, seq), to: Math.max(first, seq) }, from);
      return;
    }
    open({ seq }, from);
  }

  rowsEl.addEventListener("click", (e) => {
    // A row's Time travel button says what a click on the row does.
    const here = e.target.closest("button.travel-here");
    if (here) {
      const row = rowOf(here);
      if (row) choose(row);
      return;
    }
    // The row's own controls (a folded group's disclosure, links) keep
    // their meaning; selecting text is not a click on the row.
    if (e.target.closest("a, button, summary, input, select, textarea")) return;
    if (String(window.getSelection && window.getSelection())) return;
    const row = rowOf(e.target);
    if (row) choose(row);
  });
  // The keyboard's way is each row's Time travel button; the marks follow
  // rows drawn anew.
  new MutationObserver(() => { if (view) mark(); }).observe(rowsEl, { childList: true, subtree: true, attributes: true, attributeFilter: ["data-seq"] });

  close.addEventListener("click", shut);
  panel.addEventListener("keydown", (e) => { if (e.key === "Escape") { e.preventDefault(); shut(); } });
  all.addEventListener("change", () => { if (view) load(); });
  compare.addEventListener("click", () => {
    if (!view) return;
    if (!picking && !view.seq) view = { seq: view.to }; // from a comparison, compare its later row anew
    setPicking(!picking);
    if (!picking) load();
  });
}
