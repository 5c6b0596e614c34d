// roster-order.js: the roster's order, as roster.js applies it. A sort
// compares two rows' keys, read from the data attributes the server puts
// on each row; stays finds the rows that need not move.

// Each sort is a comparison of two rows' keys, read from their data
// attributes; ties go by name, then namespace, so the order never
// flickers between redraws.
// Names sort as people read them: "Ana 2" before "Ana 12". The server's
// key puts the unnamed (a leading U+FFFF) after every named learner.
const collate = new Intl.Collator("en", { numeric: true }).compare;
const byNamespace = (a, b) => (a.namespace < b.namespace ? -1 : a.namespace > b.namespace ? 1 : 0);
export const byName = (a, b) => collate(a.name, b.name) || byNamespace(a, b);
export const sorts = {
  name: byName,
  namespace: byNamespace,
  progress: (a, b) => b.progress - a.progress || byName(a, b),
  "progress-asc": (a, b) => a.progress - b.progress || byName(a, b),
  stuck: (a, b) => b.stuck - a.stuck || byName(a, b),
  away: (a, b) => b.away - a.away || b.idle - a.idle || byName(a, b),
};

// keyOf is a row's sort and filter keys, read again only when the row's
// digest changed (the server's digest covers its data attributes).
const keys = new WeakMap();
export function keyOf(r) {
  const d = r.dataset;
  let k = keys.get(r);
  if (k && k.sig === d.sig && d.sig) return k;
  k = { row: r, sig: d.sig, name: d.name || "", namespace: d.namespace || "", who: (d.who || "").toLowerCase(),
    progress: Number(d.progress) || 0, idle: Number(d.idle) || 0,
    stuck: d.stuck ? 1 : 0, away: d.away ? 1 : 0, following: d.following ? 1 : 0 };
  keys.set(r, k);
  return k;
}

// stays marks the longest run of rows, in the wanted order, that are
// already in that order on the page (a longest increasing subsequence of
// their places, O(n log n)): those stay, and only the others move. A row
// moved is taken out of the page and put back, which costs its style and
// layout and can drop a screen reader's place; walking the order and
// moving each row found out of place moved every row between a row's old
// and new place.
export function stays(places) {
  const tails = [], prev = new Array(places.length);
  for (let i = 0; i < places.length; i++) {
    let lo = 0, hi = tails.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (places[tails[mid]] < places[i]) lo = mid + 1; else hi = mid; }
    prev[i] = lo > 0 ? tails[lo - 1] : -1;
    tails[lo] = i;
  }
  const keep = new Array(places.length).fill(false);
  for (let i = tails.length ? tails[tails.length - 1] : -1; i >= 0; i = prev[i]) keep[i] = true;
  return keep;
}
