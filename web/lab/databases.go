package lab

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/web/lab/dbview"
)

// create is the one path by which the lab creates a Database: the form and
// the scenarios both go through the per-namespace cap. The count and the
// create happen under the namespace's lock, so concurrent creates cannot
// all count below the cap and all create.
func (h *Handler) create(ctx context.Context, ns string, in CreateInput) error {
	unlock, err := h.creating.lock(ctx, ns)
	if err != nil {
		return err
	}
	defer unlock()
	n, err := h.opts.Store.CountDatabases(ctx, ns)
	if err != nil {
		return err
	}
	if n >= h.opts.MaxDatabases {
		return &FieldError{Field: "name", Message: fmt.Sprintf("your lab already has %d Databases and may hold at most %d (the ResourceQuota %q on %s holds kubectl to it too): delete one first", n, h.opts.MaxDatabases, labns.QuotaName, labns.DatabaseQuotaResource)}
	}
	return h.opts.Store.CreateDatabase(ctx, ns, in)
}

func (h *Handler) createDatabase(ctx context.Context, ns string, r *http.Request) outcome {
	in, err := parseCreate(r.PostForm, h.opts.Pitfalls)
	if err != nil {
		return outcome{err: err}
	}
	if err := h.create(ctx, ns, in); err != nil {
		return outcome{err: err}
	}
	return outcome{message: fmt.Sprintf("Created Database %s: watch its first reconcile.", in.Name)}
}

// pathName reads and checks the {name} of a per-Database route.
func pathName(r *http.Request) (string, error) {
	name := r.PathValue("name")
	return name, validName("name", name)
}

func (h *Handler) editDatabase(ctx context.Context, ns string, r *http.Request) outcome {
	name, err := pathName(r)
	if err != nil {
		return outcome{err: err}
	}
	in, err := parseEdit(r.PostForm)
	if err != nil {
		return outcome{err: err}
	}
	if in.Empty() {
		return outcome{message: fmt.Sprintf("Nothing to patch: %s already has the values in the form.", name)}
	}
	if err := h.opts.Store.EditDatabase(ctx, ns, name, in); err != nil {
		return outcome{err: err}
	}
	var changed []string
	if in.Replicas != nil {
		changed = append(changed, fmt.Sprintf("replicas %d", *in.Replicas))
	}
	if in.Version != nil {
		changed = append(changed, "version "+orDefault(*in.Version))
	}
	return outcome{message: fmt.Sprintf("Patched %s: %s. Watch generation move, then observedGeneration catch up.", name, strings.Join(changed, ", "))}
}

func orDefault(v string) string {
	if v == "" {
		return "(engine default)"
	}
	return v
}

func (h *Handler) deleteDatabase(ctx context.Context, ns string, r *http.Request) outcome {
	name, err := pathName(r)
	if err != nil {
		return outcome{err: err}
	}
	// What the delete will meet, from the object as it is: a finalizer
	// holds it, or (the no-finalizer pitfall) nothing does.
	finalizers, known := h.finalizersOf(ctx, ns, name)
	if err := h.opts.Store.DeleteDatabase(ctx, ns, name); err != nil {
		return outcome{err: err}
	}
	return outcome{message: deleteMessage(name, finalizers, known)}
}

// finalizersOf reads name's finalizers from the lab's view of ns.
func (h *Handler) finalizersOf(ctx context.Context, ns, name string) ([]string, bool) {
	if h.opts.States == nil {
		return nil, false
	}
	dbs, err := h.opts.States.Databases(ctx, ns)
	if err != nil {
		return nil, false
	}
	for _, d := range dbs {
		if d.Name == name {
			return d.Finalizers, true
		}
	}
	return nil, false
}

// deleteMessage says what a delete of name sets off, from its finalizers.
func deleteMessage(name string, finalizers []string, known bool) string {
	switch {
	case !known:
		return fmt.Sprintf("Asked to delete %s. Watch the timeline: a finalizer, if it has one, holds it until the controller has cleaned up.", name)
	case len(finalizers) == 0:
		return fmt.Sprintf("Asked to delete %s. It has no finalizer, so nothing holds it: the API server removes it at once, the garbage collector takes its children, and no final snapshot is taken.", name)
	case len(finalizers) == 1:
		return fmt.Sprintf("Asked to delete %s. Its finalizer %s holds it until the controller has cleaned up.", name, finalizers[0])
	}
	return fmt.Sprintf("Asked to delete %s. Its finalizers %s hold it until each is removed.", name, strings.Join(finalizers, ", "))
}

// deleteWhy says why a Terminating Database's Delete button is disabled,
// from the finalizers that still hold it: a second delete changes nothing.
func deleteWhy(d dbview.Database) string {
	switch {
	case len(d.HeldBy) == 0:
		return "Already being deleted: no finalizer holds it any more, so it goes at once."
	case len(d.HeldBy) == 1 && d.HeldBy[0] == controller.Finalizer:
		return fmt.Sprintf("Already being deleted: its finalizer %s holds it until the controller has written the final snapshot. Deleting again changes nothing.", controller.Finalizer)
	case len(d.HeldBy) == 1:
		return fmt.Sprintf("Already being deleted: the finalizer %s holds it until whoever added it removes it. Deleting again changes nothing.", d.HeldBy[0])
	}
	return fmt.Sprintf("Already being deleted: its finalizers %s hold it until each is removed. Deleting again changes nothing.", strings.Join(d.HeldBy, ", "))
}

func (h *Handler) setPitfall(ctx context.Context, ns string, r *http.Request) outcome {
	name, err := pathName(r)
	if err != nil {
		return outcome{err: err}
	}
	p := strings.TrimSpace(r.PostForm.Get("pitfall"))
	if p == keepHiddenPitfall {
		return outcome{message: fmt.Sprintf("Left %s's pitfall as it was.", name)}
	}
	if err := validPitfall("pitfall", p, h.opts.Pitfalls); err != nil {
		return outcome{err: err}
	}
	if err := h.opts.Store.SetPitfall(ctx, ns, name, p); err != nil {
		return outcome{err: err}
	}
	if p == "" {
		return outcome{message: fmt.Sprintf("Pitfall off for %s: the correct controller runs it now.", name)}
	}
	return outcome{message: fmt.Sprintf("Switched the %s pitfall on for %s.", p, name)}
}

func (h *Handler) removeFinalizers(ctx context.Context, ns string, r *http.Request) outcome {
	name, err := pathName(r)
	if err != nil {
		return outcome{err: err}
	}
	if err := h.opts.Store.RemoveFinalizers(ctx, ns, name); err != nil {
		return outcome{err: err}
	}
	return outcome{message: fmt.Sprintf("Removed the finalizers of %s. If it was Terminating it is gone now, and no final snapshot was taken.", name)}
}
