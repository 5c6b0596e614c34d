// What the table keeps of a learner besides their namespace (name, role,
// progress, what the server saw of their work, when they were last seen,
// a raised hand) is saved on the namespace, as the cookie's hash is, so a
// restarted oplab shows the same roster and export.

package session

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/oplab-dev/oplab/web/progress"
)

// Saver saves what the table keeps of a learner on their namespace
// (labns.KubeNamespaces.SaveLearner); the Namespaces of a Manager that
// implement it get their sessions saved, others (tests' fakes) keep them
// in memory only.
type Saver interface {
	SaveLearner(ctx context.Context, namespace string, data []byte) error
}

// Saved is what is saved of a session on its namespace (the annotation
// labns.LearnerAnnotation), as JSON.
type Saved struct {
	Name     string            `json:"name,omitempty"`
	Role     string            `json:"role,omitempty"`
	LastSeen time.Time         `json:"lastSeen,omitzero"`
	Progress progress.Progress `json:"progress,omitzero"`
	Reported time.Time         `json:"reported,omitzero"`
	Record   progress.Record   `json:"record,omitzero"`
	Help     *Help             `json:"help,omitempty"`
}

func (e *entry) saved() Saved {
	return Saved{Name: e.name, Role: e.role, LastSeen: e.lastSeen, Progress: e.progress.Clone(), Reported: e.progress.Reported,
		Record: e.record.Clone(), Help: e.help.clone()}
}

// restoreSaved fills e with what was saved on its namespace; nothing saved
// (an older oplab's namespace) leaves it as it is.
func restoreSaved(e *entry, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	var s Saved
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("read the learner saved on namespace %s: %w", e.namespace, err)
	}
	e.name, e.role, e.progress, e.record, e.help = s.Name, s.Role, s.Progress, s.Record, s.Help
	e.progress.Reported = s.Reported
	if !s.LastSeen.IsZero() {
		e.lastSeen, e.savedSeen = s.LastSeen, s.LastSeen
	}
	return nil
}

// DefaultSaveEvery is how often changed sessions are saved: a learner's
// progress reaches the cluster within seconds, and 300 learners cost a
// write each at most per interval.
const DefaultSaveEvery = 2 * time.Second

// saveLoop saves the changed sessions every SaveEvery until ctx ends.
func (m *Manager) saveLoop(ctx context.Context) {
	t := time.NewTicker(m.opts.SaveEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.Save(ctx)
		}
	}
}

// Save writes every session that changed since it was last saved onto its
// namespace, now; the save loop calls it, and so may a caller that must
// know the cluster has it (a test, a shutdown). A failed save is tried
// again at the next one; it is logged once per namespace until it works.
func (m *Manager) Save(ctx context.Context) {
	saver, ok := m.opts.Namespaces.(Saver)
	if !ok {
		return
	}
	type pending struct {
		hash, ns string
		data     []byte
		seen     time.Time
	}
	var todo []pending
	_ = m.do(ctx, func(t *table) {
		for hash, e := range t.sessions {
			if !e.dirty {
				continue
			}
			data, err := json.Marshal(e.saved())
			if err != nil {
				continue // plain values: cannot fail
			}
			e.dirty = false
			todo = append(todo, pending{hash, e.namespace, data, e.lastSeen})
		}
	})
	for _, p := range todo {
		err := saver.SaveLearner(ctx, p.ns, p.data)
		if apierrors.IsNotFound(err) {
			continue // ended meanwhile
		}
		_ = m.do(ctx, func(t *table) {
			e, ok := t.sessions[p.hash]
			if !ok {
				return
			}
			if err != nil {
				e.dirty = true
				if !e.saveFailed {
					e.saveFailed = true
					m.opts.Logger.Error(err, "Could not save a learner's progress on their namespace; trying again", "namespace", p.ns)
				}
				return
			}
			e.savedSeen, e.saveFailed = p.seen, false
		})
	}
}
