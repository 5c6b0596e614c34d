// forms.js: the lab's forms, sent with fetch. Without script each one
// posts and the server redirects back with its outcome; with it, the
// answer (JSON) is shown in the flash, and the page stays where it is.
import { h } from "../base.js";
import { $, $$ } from "./dom.js";
import { state } from "./state.js";
import { showPaused, showController, drawControllerPill } from "./loop.js";
import { settlePart, markScenarioNext } from "./cards.js";
import { intend, revealAfter } from "./reveal.js";

const enhanced = new WeakSet();

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
function enhanceForm(form) {
  if (enhanced.has(form)) return;
  enhanced.add(form);
  form.addEventListener("submit", async (e) => {
    if (e.submitter && e.submitter.getAttribute("formmethod") === "get") return; // preview without JS
    e.preventDefault();
    // Where the form is now: a card's part may be drawn anew before the
    // answer comes, leaving this form out of the page.
    const scenario = form.closest(".scenario");
    const card = form.closest("article.db");
    const created = form.id === "create-form" ? (form.elements.name?.value || "") : "";
    // Resume runs what the pause held: the first card it changes is what
    // the learner caused (its state may come before the answer does).
    const resumes = !scenario && form.querySelector('[data-controller="start"]');
    if ((scenario || card || created || resumes) && state.mode === "live" && !state.followNs) intend(card, resumes);
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
    } finally {
      buttons.forEach((b) => { b.disabled = false; });
      sending.delete(form);
      settlePart(form);
      // Pause and Resume stay disabled while they do not apply, and so
      // does a scenario's step that no longer does.
      if (form.querySelector("[data-controller]")) drawControllerPill();
      if (scenario) markScenarioNext();
    }
  });
}

// enhanceAll sends the forms in el (or el itself) with fetch, on a live lab.
export function enhanceAll(el) {
  if (state.mode !== "live") return;
  if (el.matches && el.matches("form.act")) enhanceForm(el);
  $$("form.act", el).forEach(enhanceForm);
}

// The YAML preview follows the create form as it is typed.
export function livePreview() {
  const form = $("#create-form");
  const pre = $("#preview");
  if (!form || !pre) return;
  let timer;
  let asked = 0;
  form.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      // Answers can come out of order: only the latest question's is shown.
      const n = ++asked;
      const q = new URLSearchParams(new FormData(form));
      const resp = await fetch("/lab/preview?" + q, { credentials: "same-origin" });
      const text = await resp.text();
      if (n !== asked) return;
      pre.textContent = resp.ok ? text : "# " + text;
      pre.classList.toggle("error", !resp.ok);
    }, 200);
  });
}
