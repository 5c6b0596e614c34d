// layout.js: the focused layout (loop, selected card and newest rows on
// one screen) and projector mode (big type, one screen, for the back of
// the room). Both are attributes of #lab that lab.css reads, kept in
// localStorage and overridden by the URL (?layout=focus, ?projector=1).
import { KEY, store } from "../base.js";
import { $ } from "./dom.js";
import { state } from "./state.js";

export function setupLayout() {
  const btn = $("#layout-toggle");
  if (!btn) return;
  btn.hidden = false;
  const apply = (focus) => {
    state.root.dataset.layout = focus ? "focus" : "";
    btn.setAttribute("aria-pressed", String(focus));
  };
  const wanted = new URL(location.href).searchParams.get("layout");
  let focus = wanted ? wanted === "focus" : store.text(KEY.layout) === "focus";
  apply(focus);
  btn.addEventListener("click", () => {
    focus = !focus;
    apply(focus);
    store.saveText(KEY.layout, focus ? "focus" : "");
  });
}

export function setupProjector() {
  const root = state.root;
  const btn = $("#projector-toggle");
  if (!btn) return;
  btn.hidden = false;
  const layoutBtn = $("#layout-toggle");
  const apply = (on) => {
    root.dataset.projector = String(on);
    btn.setAttribute("aria-pressed", String(on));
    if (on) root.dataset.layout = "focus";
    else root.dataset.layout = layoutBtn?.getAttribute("aria-pressed") === "true" ? "focus" : "";
  };
  const wanted = new URL(location.href).searchParams.get("projector");
  let on = wanted !== null ? wanted === "1" : root.dataset.projector === "true" || store.text(KEY.projector) === "1";
  apply(on);
  btn.addEventListener("click", () => {
    on = !on;
    apply(on);
    store.saveText(KEY.projector, on ? "1" : "");
  });
}
