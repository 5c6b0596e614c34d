// cards.js: the object views. The server renders every one (a Database's
// card, a kept snapshot) and sends it in a state message's "html"; this
// module only puts them on the page, keeping what the learner is in the
// middle of: a part of a card's forms being edited, an open disclosure.
import { h, localize } from "../base.js";
import { $, $$ } from "./dom.js";
import { state, olderThanPage } from "./state.js";
import { selectedDB } from "./countdown.js";
import { knowObject } from "./timeline.js";
import { ANSWERED, enhanceAll, isSending } from "./forms.js";
import { revealDrawn } from "./reveal.js";
import { morph } from "../morph.js";

const dbList = $("#databases");

function fragment(html) {
  const t = document.createElement("template");
  t.innerHTML = html;
  return t.content.firstElementChild;
}
// editing: the learner has typed into the part and not sent it, is in
// one of its fields right now, or has sent one of its forms and awaits the
// answer (forms.js isSending). That part keeps what it shows.
export function editing(part) {
  if (part.matches("form") ? isSending(part) : $$("form", part).some(isSending)) return true;
  const a = document.activeElement;
  if (a && part.contains(a) && a.matches("input, select, textarea")) return true;
  return $$("input, select", part).some((el) => el.type !== "hidden" && (el.tagName === "SELECT"
    ? Math.max(el.selectedIndex, 0) !== defaultIndex(el)
    : el.value !== el.defaultValue));
}
// defaultIndex is the option a select shows as drawn: the one marked
// selected, or the first when none is (a card's "none" pitfall, its
// default Pods); comparing each option's selected with its
// defaultSelected took such a select for one being edited, for good.
function defaultIndex(select) {
  const i = [...select.options].findIndex((o) => o.defaultSelected);
  return i < 0 ? 0 : i;
}
// A state that comes while the learner edits a part leaves that part as
// they typed it (skipped); once their edit is sent (settlePart), the part
// is drawn from the card's latest state, which may have come before the
// answer did. latestActions keeps each card's latest state's form parts.
const skipped = new WeakSet();
const latestActions = new Map();
// A card's disclosures stay as the learner left them: the server draws
// every one closed.
const keepOpen = { keep: new Set(["open"]) };
// drawCard draws a card's newer state over it, morphed (morph.js): its
// nodes are kept, and with them a screen reader's place, the focus on
// its buttons and its open disclosures. A form part the learner is
// editing is left as they typed it.
function drawCard(card, fresh) {
  localize(fresh);
  const before = fields(card);
  morph($(".db-top", card), $(".db-top", fresh), keepOpen);
  morph($(".db-state", card), $(".db-state", fresh), keepOpen);
  markChanged(card, before);
  const actions = $(".db-actions", card);
  const freshActions = $(".db-actions", fresh);
  if (!actions || !freshActions) return;
  latestActions.set(card.id, freshActions);
  for (const part of $$(":scope > [data-part]", freshActions)) {
    const old = $(`:scope > [data-part="${part.dataset.part}"]`, actions);
    if (!old) continue;
    if (editing(old)) { skipped.add(old); continue; }
    drawPart(old, part);
  }
}
// fields are the texts of a card's fields (data-field), to tell which a
// new state changed.
function fields(card) {
  return new Map($$("[data-field]", card).map((el) => [el.dataset.field, el.textContent]));
}
// markChanged marks, for a moment, each field a new state changed (or
// added): the learner sees what the action did, where it did it.
function markChanged(card, before) {
  for (const el of $$("[data-field]", card)) {
    if (before.get(el.dataset.field) === el.textContent) continue;
    el.classList.remove("changed");
    void el.offsetWidth; // start the highlight again
    el.classList.add("changed");
    clearTimeout(el.changedTimer);
    el.changedTimer = setTimeout(() => el.classList.remove("changed"), 2500);
  }
}
// drawPart morphs a form part into a copy of part (latestActions keeps
// part whole), and its controls show the values drawn: a browser stops a
// control following its value attribute once the learner has used it,
// and this part is not being edited. A form new in it is sent with fetch.
function drawPart(old, part) {
  skipped.delete(old);
  morph(old, part.cloneNode(true), keepOpen);
  for (const el of $$("input, select, textarea", old)) {
    if (el.tagName === "SELECT") el.selectedIndex = defaultIndex(el);
    else if (el.type === "checkbox" || el.type === "radio") el.checked = el.defaultChecked;
    else if (el.value !== el.defaultValue) el.value = el.defaultValue;
  }
  enhanceAll(old);
}
// settlePart draws a form part a state skipped while it was edited or
// being sent, once the answer is in (forms.js).
function settlePart(form) {
  const old = form.closest(".db-actions > [data-part]");
  if (!old || !skipped.has(old) || !old.isConnected || editing(old)) return;
  const card = old.closest("article.db");
  const fresh = card && latestActions.get(card.id);
  const part = fresh && $(`:scope > [data-part="${old.dataset.part}"]`, fresh);
  if (part) drawPart(old, part);
}

// Once a form's answer is in (forms.js), the part it held back is drawn,
// and a scenario's next step says whether it still applies.
document.addEventListener(ANSWERED, (e) => {
  settlePart(e.detail.form);
  if (e.detail.scenario) markScenarioNext();
});

export function onState(m) {
  switch (m.object.kind) {
    case "Database": onDatabase(m); return;
    case "ConfigMap": onSnapshot(m); return;
  }
}
// A fresh stream first replays the recent past, states included; drawn,
// they would flash old cards for seconds (a Database deleted minutes ago,
// Terminating again) over cards that are already current. States older
// than the page (state.rendered) stay off the cards; the timeline still
// shows every step.
export function onDatabase(m) {
  const name = m.object.name;
  if (!dbList) return;
  knowObject(name);
  if (olderThanPage(m)) return;
  let card = document.getElementById("db-" + name);
  if (!m.state) {
    if (card) {
      card.classList.add("gone");
      // One word for its state: the pills of the state it was in go.
      const head = $(".db-head", card);
      $$(".pill", head).forEach((p) => p.remove());
      head.append(h("span", { class: "pill bad state" }, "Deleted"));
      $$("button", card).forEach((b) => { b.disabled = true; });
      latestActions.delete(card.id);
      markScenarioNext();
      setTimeout(() => removeGone(card), 4000);
    }
    return;
  }
  if (!m.state.html) return;
  const fresh = fragment(m.state.html);
  if (card && !card.classList.contains("gone")) {
    drawCard(card, fresh);
    revealDrawn(card);
  } else {
    if (card) card.remove();
    enhanceAll(fresh);
    localize(fresh);
    $(".empty", dbList)?.remove();
    const after = $$("article.db", dbList).find((a) => a.dataset.name > name);
    dbList.insertBefore(fresh, after || null);
    revealDrawn(fresh);
  }
  markSelected();
}
// removeGone takes a deleted card off the page once it has been seen
// gone, but not while the pointer is on the cards (the cards below it
// would move up under a pointer that aims at them: the next card's Delete
// where this one's was) or the focus in it (it would fall to the page).
function removeGone(card) {
  if (!card.isConnected) return;
  if (dbList.matches(":hover") || card.contains(document.activeElement)) {
    setTimeout(() => removeGone(card), 500);
    return;
  }
  card.remove();
  markSelected();
}
// onSnapshot keeps "Snapshots kept after delete" current: a state names a
// final snapshot whose Database is gone; a nil state removes it.
function onSnapshot(m) {
  const list = $("#snapshots");
  if (!list || olderThanPage(m)) return;
  const name = m.object.name;
  document.getElementById("snap-" + name)?.remove();
  if (m.state && m.state.html) {
    const li = fragment(m.state.html);
    localize(li);
    const after = $$("li.snapshot", list).find((x) => x.dataset.name > name);
    list.insertBefore(li, after || null);
  }
  const section = $("#kept");
  if (section) section.hidden = list.children.length === 0;
}
// clearCards empties the cards and the kept snapshots, before another
// stream draws its own.
export function clearCards() {
  dbList?.replaceChildren();
  $("#snapshots")?.replaceChildren();
  const kept = $("#kept");
  if (kept) kept.hidden = true;
}
// markSelected marks the card the focused layout shows: the one the
// timeline's filter names, else the first.
export function markSelected() {
  const want = selectedDB();
  $$("#databases article.db").forEach((a) => a.classList.toggle("selected", a.dataset.name === want));
  markScenarioNext();
}
// A scenario's next step that no longer applies is disabled, and the line
// after it says why: any step on a Database that is gone, its Delete once
// it is Terminating, switching off a pitfall that is off, and a change of
// replicas made already (the form names the replicas it changes from).
export function markScenarioNext() {
  $$(".scenario-next form").forEach((form, i) => {
    const m = /^\/lab\/databases\/([^/]+)\/(.+)$/.exec(new URL(form.action, location.href).pathname);
    if (!m) return;
    const card = document.getElementById("db-" + m[1]);
    const field = (el, name) => $(`input[name="${name}"]`, el)?.value;
    let why = "";
    if (!card || card.classList.contains("gone")) why = `${m[1]} is not there.`;
    else if (m[2] === "delete" && $(".terminating", card)) why = `${m[1]} is already being deleted: deleting again changes nothing.`;
    else if (m[2] === "pitfall" && field(form, "pitfall") === "" && !$(".db-head .pitfall", card)) why = `Done: ${m[1]}'s pitfall is off.`;
    else if (m[2] === "edit" && field(form, "origReplicas") !== undefined && field(card, "origReplicas") !== field(form, "origReplicas")) {
      why = `Changed already: ${m[1]} asks for ${field(card, "origReplicas")} replicas now.`;
    }
    const button = $("button", form);
    let note = $(".why", form);
    if (why && !note) {
      note = h("span", { class: "why small muted", id: `scenario-next-why-${i}` });
      form.append(note);
      button.setAttribute("aria-describedby", note.id);
    }
    if (note) note.textContent = why;
    button.disabled = !!why;
  });
}
