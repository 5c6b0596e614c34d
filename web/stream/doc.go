// Package stream streams the controller's trace, as controller/trace's
// Recorder records it, to browsers over websockets.
//
// The Hub is the Recorder's Feed. Hub.Run owns the viewers and the pending
// batches, as the hub of gorilla/websocket's chat example owns its
// clients: one reader and one writer goroutine per connection, ping/pong
// deadlines, a read limit, and a viewer whose buffer is full is
// disconnected rather than waited for. A connecting viewer goes to the
// Recorder first (Recorder.Join), which works out what it has missed, and
// comes back through the feed with its catch-up, in seq order among the
// live messages. The Hub never waits on the Recorder.
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
// The messages themselves, their types and the exported timelines are
// described in controller/trace.
package stream
