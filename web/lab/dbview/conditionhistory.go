package dbview

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxHistory bounds each condition's history; a thrashing controller would
// otherwise grow it forever.
const maxHistory = 50

// history is the condition changes seen for one Database. The API server
// keeps only the latest value of each condition, so the only way to show
// every change is to remember what each watch event carried.
type history struct {
	uid     string
	changes map[string][]Change // by condition type
}

// observe records the conditions one watch event carried. A Database that
// was deleted and created again under the same name has a new UID, and so
// starts a new history.
func (h *history) observe(uid string, conds []metav1.Condition, seen time.Time) {
	if h.uid != uid || h.changes == nil {
		h.uid, h.changes = uid, map[string][]Change{}
	}
	for _, c := range conds {
		h.add(c, seen)
	}
}

func (h *history) add(c metav1.Condition, seen time.Time) {
	list := h.changes[c.Type]
	next := Change{
		Seen: seen, Status: string(c.Status), Reason: c.Reason, Message: c.Message,
		ObservedGeneration: c.ObservedGeneration, LastTransitionTime: c.LastTransitionTime.Time,
	}
	if len(list) > 0 {
		last := list[len(list)-1]
		if sameValue(last, next) {
			return
		}
		next.Transition = last.Status != next.Status
	}
	list = append(list, next)
	if len(list) > maxHistory {
		list = list[len(list)-maxHistory:]
	}
	h.changes[c.Type] = list
}

// sameValue compares every field a status write sets, lastTransitionTime
// included: a controller that rewrites its conditions with a fresh
// timestamp on every reconcile (status thrash) changes nothing else, and
// each of those writes must show.
func sameValue(a, b Change) bool {
	return a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message &&
		a.ObservedGeneration == b.ObservedGeneration && a.LastTransitionTime.Equal(b.LastTransitionTime)
}

// of returns the history of one condition type, oldest first.
func (h *history) of(condType string) []Change {
	if h == nil {
		return nil
	}
	return h.changes[condType]
}
