// morph.js: the one DOM morph oplab's scripts share. morph(from, to)
// makes the live node from look like to, a node parsed from the server's
// newer HTML, keeping every node that can be kept: a text node gets new
// text, an element new attributes and children, and only what has no
// counterpart is added or removed. A kept node keeps the focus, a screen
// reader's place and a selection, which replacing it would drop. The
// roster morphs its table with it (roster.js), the lab its cards
// (lab/cards.js), the instructor's page its demo panel (demo.js), each
// into what parse(html) made of the server's HTML.
//
// Options:
//   keep: a Set of attribute names the page's script owns (the roster's
//     hidden rows, a card's open disclosures): a morph does not remove
//     them.
//   children(from, to, opts): returns true when it has morphed from's
//     children itself (the roster's rows, matched by id and digest).

// parse turns the server's HTML into the nodes to morph into: a
// template's content, in which nothing runs or loads until it is on the
// page. Every script that morphs parses with it.
export function parse(html) {
  const t = document.createElement("template");
  t.innerHTML = html;
  return t.content;
}

// same tells whether node a can be kept as node b: the same kind of node,
// and for elements the same tag and id (an id is a key).
function same(a, b) {
  if (!a || a.nodeType !== b.nodeType || a.nodeName !== b.nodeName) return false;
  return a.nodeType !== Node.ELEMENT_NODE || a.id === b.id;
}

const none = new Set();

export function morph(from, to, opts = {}) {
  if (from.nodeType !== Node.ELEMENT_NODE) {
    if (from.nodeValue !== to.nodeValue) from.nodeValue = to.nodeValue;
    return;
  }
  const keep = opts.keep || none;
  for (const name of from.getAttributeNames()) if (!keep.has(name) && !to.hasAttribute(name)) from.removeAttribute(name);
  for (const name of to.getAttributeNames()) {
    const value = to.getAttribute(name);
    if (from.getAttribute(name) !== value) from.setAttribute(name, value);
  }
  if (!(opts.children && opts.children(from, to, opts))) morphChildren(from, to, opts);
}

// morphChildren makes from's children look like to's. An element with an
// id is looked for further on and moved, rather than drawn anew. It walks
// siblings rather than copying child lists, and compares attributes by
// name: a roster redraw morphs 60 rows of some 40 nodes each, and the
// copies were most of its cost.
export function morphChildren(from, to, opts = {}) {
  let have = from.firstChild;
  for (let w = to.firstChild; w;) {
    const next = w.nextSibling; // w may move into from
    if (w.nodeType === Node.ELEMENT_NODE && w.id && !same(have, w)) {
      let moved = have;
      while (moved && !same(moved, w)) moved = moved.nextSibling;
      if (moved) { from.insertBefore(moved, have); have = moved; }
    }
    if (same(have, w)) {
      // A node equal to its counterpart (compared natively) needs nothing:
      // of a changed row's dozen cells, one or two differ.
      if (w.nodeType !== Node.ELEMENT_NODE || !have.isEqualNode(w)) morph(have, w, opts);
      have = have.nextSibling;
    } else from.insertBefore(w, have);
    w = next;
  }
  while (have) { const gone = have; have = have.nextSibling; gone.remove(); }
}
