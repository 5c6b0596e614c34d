package classroom

import "sync"

// Presence counts, per learner namespace, the live pages (trace streams on
// /ws) a learner's browser holds open, and how many of them follow the
// presenter. The roster reads it to say who follows and who is away: a
// learner with a page open is there even when they click nothing.
//
// It is a plain counter under a mutex, not a goroutine's state like the
// Classroom: every websocket opens and closes it, and nothing is published.
type Presence struct {
	mu   sync.Mutex
	open map[string]*pages
}

type pages struct{ all, following int }

// Open counts one page of namespace, following the presenter or not, and
// returns the function that gives it back when the page's stream closes;
// calling it more than once counts once.
func (p *Presence) Open(namespace string, following bool) (release func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open == nil {
		p.open = map[string]*pages{}
	}
	c := p.open[namespace]
	if c == nil {
		c = &pages{}
		p.open[namespace] = c
	}
	c.all++
	if following {
		c.following++
	}
	return sync.OnceFunc(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		c.all--
		if following {
			c.following--
		}
		if c.all <= 0 {
			delete(p.open, namespace)
		}
	})
}

// Of returns how many pages namespace has open and how many of them follow
// the presenter.
func (p *Presence) Of(namespace string) (open, following int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.open[namespace]; c != nil {
		return c.all, c.following
	}
	return 0, 0
}
