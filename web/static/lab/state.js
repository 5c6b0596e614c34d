// state.js: the one state object the lab's modules share. Everything else
// a module keeps is its own (the timeline's rows, the player's queue, the
// stream's socket) and is changed only through that module's functions.
// What is here is read by several modules and written by the one named.

const root = document.getElementById("lab");

export const state = {
  // The lab's element and what the server rendered on it; constant.
  root,
  mode: root ? root.dataset.mode : "", // live | replay | upload
  namespace: root ? root.dataset.namespace || "" : "",
  // look is the stream of a learner's lab the instructor looks at,
  // read-only (/instructor/look/NS); "" on a learner's own lab.
  look: root ? root.dataset.look || "" : "",

  // followNs is the presenter's namespace while this lab follows it (the
  // stream is then /ws?follow=presenter); "" is the learner's own.
  // follow.name is the presenter's name, follow.view where their player
  // is ({paused, seq}, or null), follow.ownPaused whether the learner's
  // own namespace was paused when following began. Written by follow.js.
  followNs: "",
  follow: { view: null, name: "", ownPaused: false },

  // rendered is when the server asked for the cards this page came with
  // (0 once a stream has no page behind it: a reset, another namespace).
  // Written by dispatch.js and follow.js; cards.js reads it.
  rendered: root ? Date.parse(root.dataset.rendered || "") || 0 : 0,
  // handlingLive: the message being handled is of now, not the past a
  // fresh stream replays first. Written by dispatch.js.
  handlingLive: true,
  // shownSeq is the seq of the last message shown: where this timeline
  // is, which a presenter reports. Written by player.js.
  shownSeq: 0,
  // replayNow is the replayed clock, the time of the last message shown
  // on /lab/replay. Written by player.js; countdown.js reads it.
  replayNow: 0,
  // yourCode: the learner's own reconciler (Run my code on /code)
  // reconciles the learner's namespace, as the server rendered it and
  // the stream's hand-overs since say. Written by controller.js.
  yourCode: root ? root.dataset.yourCode === "true" : false,
};

// paused is whether the namespace the lab shows is paused; the page keeps
// it on #lab (data-paused), where lab.css reads it too.
export const paused = () => root.dataset.paused === "true";

// whose is whose namespace the lab shows: "your", or the presenter's.
export const whose = () => (state.followNs ? `${state.follow.name}'s` : "your");

// olderThanPage: states older than the page stay off the cards (cards.js).
export const olderThanPage = (m) => state.rendered && m.time && new Date(m.time).getTime() < state.rendered;
