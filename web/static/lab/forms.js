// forms.js: the lab's forms, sent with fetch. Without script each one
// posts and the server redirects back with its outcome; with it, the
// answer (JSON) is shown in the flash, and the page stays where it is.
import { h } from "../base.js";
import { $, $$ } from "./dom.js";
import { state } from "./state.js";
import { showPaused, showController, drawControllerPill } from "./loop.js";
import { intend, revealAfter, keepSeen, revealNote, stayPut } from "./reveal.js";

const enhanced = new WeakSet();

// said puts the answer next to the form it answers too, where the learner
// clicked: the flash, at the top of the page, is read out, but is seldom
// on screen beside a card's form. It stays until the next answer.
function said(ok, message, form, brings) {
  $$(".said").forEach((e) => e.remove());
  if (!form || !form.isConnected || !message) return;
  const note = h("p", { class: "said small " + (ok ? "ok" : "bad") }, (ok ? "✓ " : "✗ ") + message);
  // A create or a resume is answered beside its form and on the card the
  // page brings into view (reveal.js).
  if (ok && brings) revealNote(note.cloneNode(true));
  // A card's form part is drawn anew by each state; the note goes after
  // it, in the card's actions, which are not. The create form's goes
  // above its live preview.
  const part = form.closest(".db-actions > [data-part]");
  const anchor = part || form.querySelector(".create-actions") || form;
  anchor.after(note);
  if (part) keepSeen(note);
}

function flash(ok, message, field, form) {
  const box = $("#flash");
  $$(".invalid").forEach((e) => {
    e.classList.remove("invalid");
    if (e.getAttribute("aria-describedby") === "field-error") e.removeAttribute("aria-describedby");
  });
  $$(".field-error").forEach((e) => e.remove());
  if (!box) return;
  box.replaceChildren(h("p", { class: "flash " + (ok ? "flash-ok" : "flash-error") }, message));
  if (!ok && field && form) {
    const input = form.querySelector(`[name="${CSS.escape(field)}"]`);
    if (input) {
      // The field is where the learner now looks (a card's form may be a
      // screen or more below the flash): the answer is said there too,
      // and read out with the field, not announced a second time.
      const why = h("p", { class: "field-error", id: "field-error" }, message);
      // Above the create form's buttons, not under its live preview,
      // which redraws a moment later and would push it out of view.
      const actions = form.querySelector(".create-actions");
      if (actions) actions.before(why);
      else form.append(why);
      input.setAttribute("aria-describedby", why.id);
      input.classList.add("invalid");
      input.focus();
      why.scrollIntoView({ block: "nearest" });
      // And kept there while the page settles (the preview redrawn).
      keepSeen(why);
    }
  }
}
// settle makes what was sent the form's new baseline, so the next
// state may be drawn over it: the learner is no longer editing it.
function settle(form) {
  $$("input", form).forEach((el) => { el.defaultValue = el.value; });
  $$("option", form).forEach((o) => { o.defaultSelected = o.selected; });
}
// sending holds the forms whose request is on its way. A card's state
// that comes meanwhile leaves such a form as it is (cards.js editing),
// and draws it once the answer is in and its buttons are enabled again:
// drawn first, its Delete disabled for a Database now Terminating was
// enabled again by the answer's end.
const sending = new WeakSet();
export const isSending = (form) => sending.has(form);
// ANSWERED is the event a form's answer sends to the document, with the
// form and whether it was a scenario's step: cards.js then draws the card
// part it held back. An event, since cards.js imports this module for the
// forms it draws.
export const ANSWERED = "oplab:answered";
function enhanceForm(form) {
  if (enhanced.has(form)) return;
  enhanced.add(form);
  form.addEventListener("submit", async (e) => {
    // Preview YAML: without script the page comes back with the form open
    // and the preview under it; with it, the preview is drawn in place.
    if (e.submitter && e.submitter.getAttribute("formmethod") === "get") {
      e.preventDefault();
      showPreview(form, true);
      return;
    }
    e.preventDefault();
    // Where the form is now: a card's part may be drawn anew before the
    // answer comes, leaving this form out of the page.
    const scenario = form.closest(".scenario");
    const card = form.closest("article.db");
    const created = form.id === "create-form" ? (form.elements.name?.value || "") : "";
    // Resume runs what the pause held: the first card it changes is what
    // the learner caused (its state may come before the answer does).
    const resumes = !scenario && form.querySelector('[data-controller="start"]');
    // The answer to the last form goes: the next one's comes (said), and
    // nothing keeps the old one in view meanwhile (reveal.js keepSeen).
    $$(".said").forEach((el) => el.remove());
    if ((scenario || card || created || resumes) && state.mode === "live" && !state.followNs) intend(card, resumes);
    else stayPut();
    const buttons = $$("button", form);
    buttons.forEach((b) => { b.disabled = true; });
    sending.add(form);
    const busy = form.dataset.busy;
    if (busy) flash(true, busy);
    try {
      const resp = await fetch(form.action, {
        method: "POST", body: new URLSearchParams(new FormData(form)),
        headers: { Accept: "application/json" }, credentials: "same-origin",
      });
      let res;
      try { res = await resp.json(); } catch (err) { res = { ok: false, message: `${resp.status} ${resp.statusText}` }; }
      flash(res.ok, res.message, res.field, form);
      if (!(!res.ok && res.field && form.querySelector(`[name="${CSS.escape(res.field)}"]`))) said(res.ok, res.message, form, !!(created || resumes));
      if (res.ok && created) {
        // As after the page's own post: the next Database needs its own
        // name, and gets no pitfall unless the learner picks one again.
        form.elements.name.value = "";
        form.elements.pitfall.value = "";
        form.dispatchEvent(new Event("input"));
      }
      if (res.ok) settle(form);
      // controllerRunning is "reconciles this namespace"; paused says why not.
      if (typeof res.paused === "boolean") showPaused(res.paused);
      if (typeof res.controllerRunning === "boolean" && !res.paused) showController(res.controllerRunning);
      if (res.ok && scenario && !form.dataset.reveal) {
        form.remove();
        $(".scenario .watch")?.classList.remove("pending");
        const next = $(".scenario .scenario-next");
        if (next) next.hidden = false;
        const u = new URL(location.href);
        u.searchParams.set("ready", "1");
        history.replaceState(null, "", u);
      }
      if (res.ok) revealAfter(created, scenario || card);
    } catch (err) {
      flash(false, "The request failed: " + err.message);
      said(false, "The request failed: " + err.message, form);
    } finally {
      buttons.forEach((b) => { b.disabled = false; });
      sending.delete(form);
      // A scenario's step that no longer applies is disabled (cards.js);
      document.dispatchEvent(new CustomEvent(ANSWERED, { detail: { form, scenario: !!scenario } }));
      // so are Pause and Resume while they do not apply.
      if (form.querySelector("[data-controller]")) drawControllerPill();
    }
  });
}

// enhanceAll sends the forms in el (or el itself) with fetch, on a live lab.
export function enhanceAll(el) {
  if (state.mode !== "live") return;
  if (el.matches && el.matches("form.act")) enhanceForm(el);
  $$("form.act", el).forEach(enhanceForm);
}

// showPreview draws the YAML the create form describes, in place; asked
// by the Preview YAML button, it then brings the preview into view.
// Answers can come out of order: only the latest question's is shown.
let asked = 0;
async function showPreview(form, shown) {
  const pre = $("#preview");
  if (!pre) return;
  const n = ++asked;
  const q = new URLSearchParams(new FormData(form));
  let text, ok;
  try {
    const resp = await fetch("/lab/preview?" + q, { credentials: "same-origin" });
    text = await resp.text();
    ok = resp.ok;
  } catch (err) {
    text = "could not ask for the preview: " + err.message;
    ok = false;
  }
  if (n !== asked) return;
  pre.textContent = ok ? text : "# " + text;
  pre.classList.toggle("error", !ok);
  if (shown) {
    pre.scrollIntoView({ block: "nearest" });
    pre.focus({ preventScroll: true });
  }
}
// The YAML preview follows the create form as it is typed.
export function livePreview() {
  const form = $("#create-form");
  if (!form || !$("#preview")) return;
  let timer;
  form.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => showPreview(form, false), 200);
  });
}
