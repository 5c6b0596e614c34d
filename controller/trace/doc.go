// Package trace records the controller's trace: every step it emits
// (controller.Sink), every object version its watches deliver
// (controller.Observer), and the lab's view of each object, in one
// sequence. It keeps what it records as the web streams it, exports it, and
// reads an export back for a replay. It knows nothing of HTTP: web/stream
// streams what it records to browsers.
//
// The Recorder owns its state in one goroutine: Emit never blocks.
// Recorder.Run stamps each step with a global, monotonic seq, encodes it
// to JSON (once: everything after shares those bytes), and keeps a ring of
// recent messages per namespace and the latest state of every object
// (PublishState takes it already encoded; with PublishRendered, an older
// state keeps only its view model, packed against the newer one). It
// answers exports, and works out what a connecting viewer has missed.
//
// It hands its Feed (the web's hub), on one channel and in seq order, what
// it has recorded and each Viewer that joins with its catch-up, so a
// viewer's catch-up and the live messages after it meet with no gap and no
// duplicate. The catch-up of a fresh viewer is built once and shared by a
// classroom connecting at once, as Batches its Feed frames once.
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
// controller.QueueSample) and the recorder's own:
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
package trace
