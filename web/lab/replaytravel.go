package lab

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/oplab-dev/oplab/web/httpx"
	"github.com/oplab-dev/oplab/web/stream"
)

// A replay's time travel: the history an uploaded export carries (version 3
// on) is checked and rebuilt when the file is read, then kept here, in
// memory, under a random id the replay page holds, for a while. The page
// asks /lab/replay/history?replay=ID&at=N (and /diff) as the live lab asks
// /lab/history: the same answers, from the file's history, read-only. The
// id is the only key: a replay is per upload, and only the page that
// uploaded it has the id.
const (
	// maxReplayTravels is how many replays' histories are kept at once;
	// the oldest goes first. Each is at most maxReplayHistoryBytes.
	maxReplayTravels = 8
	// replayTravelTTL is how long a replay's history is kept after the
	// upload.
	replayTravelTTL = time.Hour
)

type replayTravel struct {
	id       string
	ns       string
	history  *stream.ReplayHistory
	deadline time.Time
}

// replayTravels is one for the process, like replaySlots: what it bounds
// is the process's memory.
var replayTravels = struct {
	sync.Mutex
	list []*replayTravel // oldest first
}{}

// keepReplayTravel keeps h for the replay of namespace ns and returns its id.
func keepReplayTravel(ns string, h *stream.ReplayHistory) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	t := &replayTravel{id: hex.EncodeToString(b[:]), ns: ns, history: h, deadline: time.Now().Add(replayTravelTTL)}
	replayTravels.Lock()
	defer replayTravels.Unlock()
	now := time.Now()
	kept := replayTravels.list[:0]
	for _, o := range replayTravels.list {
		if now.Before(o.deadline) {
			kept = append(kept, o)
		}
	}
	if len(kept) >= maxReplayTravels {
		kept = kept[len(kept)-maxReplayTravels+1:]
	}
	replayTravels.list = append(append([]*replayTravel(nil), kept...), t)
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
