// Package stream records the controller's trace and streams it to browsers.
//
// Two types, each owning its state in one goroutine:
//
//   - The Recorder is the controller's trace sink (controller.Sink): Emit
//     never blocks. Recorder.Run stamps each step with a global, monotonic
//     seq, encodes it to JSON (once: everything after shares those bytes),
//     and keeps a ring of recent messages per namespace and the latest state
//     of every object (PublishState takes it already encoded; with
//     PublishRendered, an older state keeps only its view model, packed
//     against the newer one). It answers
//     exports, and works out what a connecting viewer has missed.
//   - The Hub streams what the Recorder records to websocket viewers.
//     Hub.Run owns the viewers and the pending batches, as the hub of
//     gorilla/websocket's chat example owns its clients: one reader and one
//     writer goroutine per connection, ping/pong deadlines, a read limit,
//     and a viewer whose buffer is full is disconnected rather than waited
//     for.
//
// The Recorder hands the Hub, on one channel and in seq order, what it has
// recorded and each viewer that joins with its catch-up, so a viewer's
// catch-up and the live messages after it meet with no gap and no
// duplicate. The Hub never waits on the Recorder.
//
// # The /ws protocol
//
// Connect to /ws (Hub.Handler). The server resolves the viewer's
// namespace from its session (403 when it cannot) and checks the Origin
// header: the request's own host or an allowed origin (403 otherwise).
//
// Every websocket text frame the server sends is a JSON array of one or more
// messages, in seq order. The server sends nothing else; the viewer sends
// nothing but pongs and a close (frames over 512 bytes close the
// connection with 1009).
//
//   - Without ?since: the latest state snapshots of the namespace's objects,
//     then the recent history (ring), then live messages.
//   - With ?since=S, S still covered by the ring: only messages with seq > S,
//     then live messages. No duplicates, and no gaps but the states a newer
//     state of the same object superseded (see "state" below).
//   - With ?since=S older than the ring (or newer than the server's last seq,
//     as after a restart): a "reset" message first, then snapshots, then the
//     ring, then live messages. On "reset" a viewer clears its timeline.
//
// A viewer sees only the messages of its namespace (a step's namespace is
// object.namespace) plus global messages, whose object has no namespace
// (for example type "controller": started/stopped, or "dropped").
// Messages are coalesced: a frame carries what arrived within a window that
// grows with the square of the number of viewers (with the defaults: none
// for a few viewers, 5ms at 500, 80ms from 2,000 on); the first message after
// a quiet spell goes out at once. While the controller is busy (over 200
// messages a second: the stream's own rate, never the machine's load) the
// window widens so that the viewers a frame goes to get about 2,000 frames
// a second together (250ms at 500 viewers, 1s, the most, at 2,000): the
// same messages, in fewer frames, leaving the CPU to the controller. Each batch is encoded, framed and compressed once per
// namespace and shared by all its viewers; frames of 1 KiB and more are
// compressed (permessage-deflate, without context takeover) for viewers
// that offer it, as browsers do.
//
// A viewer that falls behind by HubOptions.ClientBuffer frames is closed with
// code 1013 (try again later), or cut off (1006) if a write to it was stuck;
// on any close a viewer should reconnect with ?since=<last seq it received>.
// At shutdown viewers are closed with 1001 (going away). A viewer that
// receives "reset" should also forget its last seq, since the messages that
// follow may have smaller ones (after a restart, seq starts again at 1).
//
// # Message schema
//
// A message is a controller.Step, flattened, plus an optional state:
//
//	{
//	  "seq": 42,                              // global, strictly increasing (0 only on "reset")
//	  "time": "2026-11-30T09:41:07.123456Z",  // RFC 3339, when emitted
//	  "type": "action",                       // see below
//	  "object": {"kind": "Database", "namespace": "learner-1", "name": "db"},
//	  ...                                     // the fields of the type, omitted when empty
//	  "state": {...}                          // type "state" only
//	}
//
// Types: the controller's step types ("event", "reconcile.start", "fetch",
// "diff", "read", "action", "throttled", "finalizer", "status", "result",
// "controller", and "queue", the namespace's share of the work queue each
// second it changed; their fields are documented on controller.Step and
// controller.QueueSample) and the stream's own:
//
//   - "state": the latest view model of object, as published by the lab
//     page's watcher (Recorder.PublishRendered), its JSON as published.
//     Without "state" the object was deleted. The lab's states carry
//     "html", the object's view as the lab page renders it, which the
//     browser swaps in. A catch-up sends each object's latest state only,
//     leaving out the states a newer one superseded; an export has them
//     all, the older ones as their view model alone (older.go).
//   - "reset": control message, seq 0, object {"kind": "Namespace", "name":
//     the viewer's namespace}; "message" says why.
//   - "dropped": global; the recorder's inbox was full and it dropped steps
//     rather than slow the controller; "message" says how many.
//
// # Exported timelines
//
// Recorder.Export returns a namespace's recorded timeline (the snapshots of
// objects whose history left the ring, then the ring, merged with global
// messages) in the same schema, each message as the bytes recorded;
// Export.WriteTo writes them as they are:
//
//	{"version": 3, "exportedAt": "...", "namespace": "learner-1", "code": {...}, "history": {...}, "messages": [ ... ]}
//
// "code" (version 2 on, optional) is the learner's own reconciler from the
// code page: "source", the code last kept, "ran", the code last run, and
// "running", whether it still had the namespace (Code). "history" (version
// 3 on) is the namespace's object history, the versions as the recorder
// keeps them (ExportHistory, exporthistory.go). A version 1 file is the
// same without "code" or "history", a version 2 file without "history";
// ReadExport reads all three.
//
// Replaying an export is reading it with ReadExport, which refuses a file
// over its size limit or with anything after the JSON object, and checks
// the version, the code (CheckCode), the history (CheckHistory), that seq strictly increases, and that
// every message has a type, a time and an object of the export's namespace
// (or none). It returns the messages as they were in the file, not encoded
// again.
//
// # Object history (time travel)
//
// The Recorder is also a controller.Observer: the controller's event filter
// hands it each object version a watch delivers, before that event's step,
// through the same inbox, so every version has its place among the
// messages. Run keeps, per namespace, each version as a JSON merge patch
// onto the one before it with a keyframe every few versions, within
// RecorderOptions.HistoryBytes (history.go). HistoryAt(namespace, seq)
// returns the objects as the controller had seen them when message seq was
// recorded, each with its previous version; Run only gathers the patches,
// the caller applies them. An export carries the history; a replay travels
// in it with NewReplayHistory, whose HistoryAt answers as the Recorder's.
package stream
