package lab

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/web/httpx"
)

// A replay's time travel: the history an uploaded export carries (version 3
// on) is checked and rebuilt when the file is read, then kept here, in
// memory, under a random id the replay page holds, for a while. The page
// asks /lab/replay/history?replay=ID&at=N (and /diff) as the live lab asks
// /lab/history: the same answers, from the file's history, read-only. The
// id is the only key: a replay is per upload, and only the page that
// uploaded it has the id.
//
// Each uploader (replayer: the session, else the address) keeps one, their
// latest, so a class opening the same file at once does not push each
// other's out; what bounds the process's memory is the bytes kept.
const (
	// maxReplayTravelBytes bounds the histories kept, by the size of their
	// versions in the files; the oldest goes first. One is at most
	// maxReplayHistoryBytes.
	maxReplayTravelBytes = 8 * maxReplayHistoryBytes
	// replayTravelTTL is how long a replay's history is kept after the
	// upload.
	replayTravelTTL = time.Hour
)

type replayTravel struct {
	id       string
	who      string
	ns       string
	bytes    int
	history  *trace.ReplayHistory
	deadline time.Time
}

// replayTravels is one for the process, like replaySpool: what it bounds
// is the process's memory.
var replayTravels = struct {
	sync.Mutex
	list []*replayTravel // oldest first
}{}

// historyBytes is what e's versions weigh in the file.
func historyBytes(e *trace.ExportHistory) int {
	n := 0
	for _, o := range e.Objects {
		for _, v := range o.Versions {
			n += len(v.Object) + len(v.Patch)
		}
	}
	return n
}

// keepReplayTravel keeps h, of an export's history e, for the replay of
// namespace ns by who, in place of who's earlier one, and returns its id.
func keepReplayTravel(who, ns string, e *trace.ExportHistory, h *trace.ReplayHistory) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	t := &replayTravel{id: hex.EncodeToString(b[:]), who: who, ns: ns, bytes: historyBytes(e), history: h,
		deadline: time.Now().Add(replayTravelTTL)}
	replayTravels.Lock()
	defer replayTravels.Unlock()
	now := time.Now()
	var kept []*replayTravel
	total := t.bytes
	for _, o := range replayTravels.list {
		if now.Before(o.deadline) && o.who != who {
			kept = append(kept, o)
			total += o.bytes
		}
	}
	for len(kept) > 0 && total > maxReplayTravelBytes {
		total -= kept[0].bytes
		kept = kept[1:]
	}
	replayTravels.list = append(kept, t)
	return t.id
}

func findReplayTravel(id string) *replayTravel {
	replayTravels.Lock()
	defer replayTravels.Unlock()
	for _, t := range replayTravels.list {
		if t.id == id && time.Now().Before(t.deadline) {
			return t
		}
	}
	return nil
}

// replayTravelOf is the replay the request names, or a 404 saying why.
func replayTravelOf(w http.ResponseWriter, r *http.Request) (*replayTravel, bool) {
	id := r.URL.Query().Get("replay")
	if id == "" {
		httpx.JSON(w, http.StatusBadRequest, map[string]string{"error": "replay is missing: want the id of an opened replay"})
		return nil, false
	}
	t := findReplayTravel(id)
	if t == nil {
		httpx.JSON(w, http.StatusNotFound, map[string]string{"error": "this replay's history is no longer kept (it is kept an hour, for the last few files opened): open the file again"})
		return nil, false
	}
	return t, true
}

// replayTravelAt serves GET /lab/replay/history?replay=ID&at=N, as
// travelAt does for the live lab.
func (h *Handler) replayTravelAt(w http.ResponseWriter, r *http.Request) {
	if t, ok := replayTravelOf(w, r); ok {
		h.serveTravelAt(w, r, t.history, t.ns)
	}
}

// replayTravelDiff serves GET /lab/replay/history/diff?replay=ID&from=N&to=M.
func (h *Handler) replayTravelDiff(w http.ResponseWriter, r *http.Request) {
	if t, ok := replayTravelOf(w, r); ok {
		h.serveTravelDiff(w, r, t.history, t.ns)
	}
}
