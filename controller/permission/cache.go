package permission

import (
	"context"
	"sync"

	"github.com/go-logr/logr"
	toolscache "k8s.io/client-go/tools/cache"
)

// Refusals watches an informer cache's lists and watches for refused
// permissions. Without it, an informer oplab may not list retries for
// ever: the cache never syncs and oplab waits at start with nothing but
// client-go's own log line to say why. Set WatchErrorHandler as the cache's
// DefaultWatchErrorHandler and stop waiting for the sync on Refused.
type Refusals struct {
	// Logger receives one line per refusal, in words.
	Logger logr.Logger

	once    sync.Once
	refused chan struct{}
	mu      sync.Mutex
	err     error
}

// NewRefusals returns Refusals that log to log.
func NewRefusals(log logr.Logger) *Refusals {
	return &Refusals{Logger: log, refused: make(chan struct{})}
}

// WatchErrorHandler is a toolscache.WatchErrorHandlerWithContext: refused
// permissions are logged in words and reported on Refused, anything else
// goes to client-go's default handler.
func (r *Refusals) WatchErrorHandler(ctx context.Context, ref *toolscache.Reflector, err error) {
	explained := Explain(err)
	if !Explained(explained) {
		toolscache.DefaultWatchErrorHandler(ctx, ref, err)
		return
	}
	r.Logger.Error(explained, "Failed to list or watch for the informer cache", "type", ref.TypeDescription())
	r.once.Do(func() {
		r.mu.Lock()
		r.err = explained
		r.mu.Unlock()
		close(r.refused)
	})
}

// Refused is closed at the first refusal.
func (r *Refusals) Refused() <-chan struct{} { return r.refused }

// Err is the first refusal, in words; nil if none.
func (r *Refusals) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}
