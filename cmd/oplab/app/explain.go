package app

import (
	"context"

	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/controller/permission"
	"github.com/oplab-dev/oplab/web/session"
)

// explainedNamespaces passes the session manager's cluster calls through
// permission.Explain, so that a learner whose session cannot start, and
// oplab's log for the background work (marking a namespace used, idle
// cleanup, reclaiming orphans), name the permission oplab lacks.
type explainedNamespaces struct{ session.Namespaces }

func (n explainedNamespaces) Create(ctx context.Context, name, cookieHash string) error {
	return permission.Explain(n.Namespaces.Create(ctx, name, cookieHash))
}

func (n explainedNamespaces) MarkActed(ctx context.Context, name string) error {
	return permission.Explain(n.Namespaces.MarkActed(ctx, name))
}

func (n explainedNamespaces) Delete(ctx context.Context, name string) error {
	return permission.Explain(n.Namespaces.Delete(ctx, name))
}

func (n explainedNamespaces) List(ctx context.Context) ([]labns.Namespace, error) {
	list, err := n.Namespaces.List(ctx)
	return list, permission.Explain(err)
}

// explainRevoke is revoke with its refusals in words (it runs before a
// namespace is deleted, and only the log hears of it).
func explainRevoke(revoke func(ctx context.Context, ns string) error) func(ctx context.Context, ns string) error {
	return func(ctx context.Context, ns string) error { return permission.Explain(revoke(ctx, ns)) }
}

// SaveLearner passes on to the namespaces' own, when they keep learners
// (labns.KubeNamespaces does).
func (n explainedNamespaces) SaveLearner(ctx context.Context, name string, data []byte) error {
	s, ok := n.Namespaces.(session.Saver)
	if !ok {
		return nil
	}
	return permission.Explain(s.SaveLearner(ctx, name, data))
}

// explainedKeeper is the class namespace's keeper of ended sessions, its
// refusals in words.
type explainedKeeper struct{ session.Keeper }

func (k explainedKeeper) Keep(ctx context.Context, ns string, data, export []byte) error {
	return permission.Explain(k.Keeper.Keep(ctx, ns, data, export))
}

func (k explainedKeeper) Kept(ctx context.Context) ([][]byte, error) {
	out, err := k.Keeper.Kept(ctx)
	return out, permission.Explain(err)
}

func (k explainedKeeper) Forget(ctx context.Context, ns string) error {
	return permission.Explain(k.Keeper.Forget(ctx, ns))
}

// ReleaseDatabases passes on to the namespaces' own.
func (n explainedNamespaces) ReleaseDatabases(ctx context.Context, ns string) error {
	r, ok := n.Namespaces.(session.Releaser)
	if !ok {
		return nil
	}
	return permission.Explain(r.ReleaseDatabases(ctx, ns))
}
