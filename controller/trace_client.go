// The client side of the trace: the interceptor around the reconciler's
// client (and its APIReader) that turns each API call into its step.

package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/permission"
)

// tracingClient wraps c so that each call the reconciler makes is traced:
// reading its Database is the fetch step, a write to a child an action,
// adding or removing the finalizer a finalizer step, a status write the
// status step with the conditions it changed. before reads the Database as
// the reconciler last saw it, untraced, to tell what a write changed.
func tracingClient(c client.Client, before client.Reader, book *triggerBook, registry string) client.Client {
	t := &traceFuncs{before: before, book: book, registry: registry}
	return interceptor.NewClient(withoutWatch{c}, interceptor.Funcs{
		Get:               t.get,
		Create:            t.create,
		Update:            t.update,
		Patch:             t.patch,
		Delete:            t.delete,
		SubResourcePatch:  t.subResourcePatch,
		SubResourceUpdate: t.subResourceUpdate,
	})
}

type traceFuncs struct {
	before client.Reader
	book   *triggerBook
	// registry is the reconciler's ImageRegistry, so that the diffs traced
	// compare against the image the reconciler wants.
	registry string
}

func (t *traceFuncs) get(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Get(ctx, key, obj, opts...)
	db, ok := obj.(*dbv1.Database)
	if !ok {
		getChild(ctx, key, obj, err, t.registry)
		return err
	}
	rt := traceOf(ctx)
	if rt == nil || key.Name != rt.database.Name || key.Namespace != rt.database.Namespace || rt.found != "" {
		return err
	}
	switch {
	case apierrors.IsNotFound(err):
		rt.found = "not-found"
		rt.step(Step{Type: StepFetch, Found: rt.found, Message: "the Database is gone; nothing to do"})
	case err != nil:
		rt.found = "error"
		rt.step(Step{Type: StepFetch, Found: rt.found, Error: errText(err)})
	default:
		rt.found, rt.observed, rt.pitfall = "found", db.Status.ObservedGeneration, PitfallShown(db)
		rt.db = db.DeepCopy()
		rt.step(Step{Type: StepFetch, Found: rt.found, Generation: db.Generation, ResourceVersion: db.ResourceVersion,
			Message: fmt.Sprintf("generation %d, observed %d, resourceVersion %s", db.Generation, db.Status.ObservedGeneration, db.ResourceVersion)})
	}
	return err
}

// getChild traces a read of one of the Database's children as the diff the
// reconciler is about to act on: missing, in sync, or what differs in
// words. It works the diff out itself, from the Database it fetched and the
// same comparisons the reconciler makes (children.go). A read during a
// deletion (draining) compares nothing and is not traced.
func getChild(ctx context.Context, key client.ObjectKey, obj client.Object, err error, registry string) {
	rt := traceOf(ctx)
	if rt == nil || rt.db == nil || !rt.db.DeletionTimestamp.IsZero() || !isChild(rt.db, obj, key) {
		return
	}
	if rt.yourCode {
		// oplab's comparison is not the learner's: say only what was read.
		found := "found"
		switch {
		case apierrors.IsNotFound(err):
			found = "not-found"
		case err != nil:
			return
		}
		rt.step(Step{Type: StepRead, Target: &ObjectRef{Kind: kindOf(obj), Namespace: key.Namespace, Name: key.Name}, Found: found,
			ResourceVersion: obj.GetResourceVersion(), Message: "read by your code: " + found})
		return
	}
	switch {
	case apierrors.IsNotFound(err):
		rt.step(diffStep(kindOf(obj), key, []string{"missing"}))
	case err == nil:
		rt.step(diffStep(kindOf(obj), key, childDifferences(rt.db, obj, registry)))
	}
}

// isChild reports whether key names one of db's children of obj's kind.
func isChild(db *dbv1.Database, obj client.Object, key client.ObjectKey) bool {
	if key.Namespace != db.Namespace {
		return false
	}
	switch obj.(type) {
	case *corev1.Secret:
		return key.Name == SecretName(db.Name)
	case *corev1.Service, *appsv1.StatefulSet:
		return key.Name == db.Name
	}
	return false
}

// childDifferences is what the reconciler will find differs in actual, a
// child of db: the ownership first (another controller's child is left
// alone, an unowned one adopted), then the fields the controller manages.
func childDifferences(db *dbv1.Database, actual client.Object, registry string) []string {
	if owner := metav1.GetControllerOfNoCopy(actual); owner != nil && owner.UID != db.UID {
		return []string{fmt.Sprintf("controlled by %s %s", owner.Kind, owner.Name)}
	}
	var out []string
	switch a := actual.(type) {
	case *corev1.Secret:
		out = diffLabels(a, desiredSecret(db))
	case *corev1.Service:
		out = diffService(a, desiredService(db))
	case *appsv1.StatefulSet:
		out = diffStatefulSet(a, desiredStatefulSet(db, registry))
	}
	if !metav1.IsControlledBy(actual, db) {
		out = append([]string{adoptingDifference}, out...)
	}
	return out
}

// diffStep is the trace's diff of one child: what differs, in words.
func diffStep(kind string, key client.ObjectKey, differences []string) Step {
	msg := "in sync"
	if len(differences) > 0 {
		msg = fmt.Sprintf("%d difference(s)", len(differences))
	}
	return Step{Type: StepDiff, Target: &ObjectRef{Kind: kind, Namespace: key.Namespace, Name: key.Name},
		Differences: differences, Message: msg}
}

// snapshotStep traces the final snapshot's ConfigMap being written, or
// found there already by the learner's code (phase snapshot), or refused
// because the namespace is going (phase skipped).
func snapshotStep(ctx context.Context, obj client.Object, err error) {
	rt := traceOf(ctx)
	if _, ok := obj.(*corev1.ConfigMap); !ok || rt == nil || obj.GetName() != SnapshotName(rt.database.Name) {
		return
	}
	switch {
	case err == nil:
		rt.step(Step{Type: StepFinalizer, Phase: "snapshot", Message: "final snapshot written to ConfigMap " + obj.GetName()})
	case apierrors.IsAlreadyExists(err) && rt.yourCode:
		// oplab's reconciler reads the one there and says whose it is
		// (tracedReader); the learner's code may not look.
		rt.step(Step{Type: StepFinalizer, Phase: "snapshot", Message: "final snapshot ConfigMap " + obj.GetName() +
			" was already there, from an earlier attempt or an earlier Database of this name: kept, not written again"})
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		rt.step(Step{Type: StepFinalizer, Phase: "skipped", Message: "namespace terminating: no snapshot can be written or kept"})
	}
}

// tracingReader wraps the reconciler's APIReader as tracingClient wraps its
// client: a child read live (after AlreadyExists) is a diff, the Pods
// listed during a deletion are the drain, and a snapshot of this very
// Database found from an earlier attempt is the snapshot, kept.
func tracingReader(r client.Reader, registry string) client.Reader { return tracedReader{r, registry} }

type tracedReader struct {
	client.Reader
	registry string
}

func (t tracedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := t.Reader.Get(ctx, key, obj, opts...)
	getChild(ctx, key, obj, err, t.registry)
	if cm, ok := obj.(*corev1.ConfigMap); ok && err == nil {
		if rt := traceOf(ctx); rt != nil && rt.db != nil && cm.Name == SnapshotName(rt.db.Name) && cm.Data["uid"] == string(rt.db.UID) {
			rt.step(Step{Type: StepFinalizer, Phase: "snapshot", Message: "final snapshot kept: ConfigMap " + cm.Name + " was written by an earlier attempt"})
		}
	}
	return err
}

func (t tracedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	err := t.Reader.List(ctx, list, opts...)
	pods, ok := list.(*corev1.PodList)
	if rt := traceOf(ctx); ok && err == nil && rt != nil && rt.db != nil && !rt.db.DeletionTimestamp.IsZero() {
		rt.step(Step{Type: StepFinalizer, Phase: "draining", Message: fmt.Sprintf("dropping connections: %d Pod(s) left", len(pods.Items))})
	}
	return err
}

func (t *traceFuncs) create(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
	began := time.Now()
	t.writing(obj)
	err := c.Create(ctx, obj, opts...)
	outcome, msg := OutcomeCreated, ""
	switch {
	case apierrors.IsAlreadyExists(err):
		outcome, msg = OutcomeAlreadyExists, "already exists"
	case err != nil:
		outcome = OutcomeError
	}
	t.action(ctx, c, "create", obj, outcome, began, err, msg)
	snapshotStep(ctx, obj, err)
	t.own(ctx, obj, "create", err)
	return err
}

// own remembers a successful write's resourceVersion, so that the watch
// event it causes is known for the reconciler's own write coming back.
func (t *traceFuncs) own(ctx context.Context, obj client.Object, what string, err error) {
	ref := ObjectRef{Kind: kindOf(obj), Namespace: obj.GetNamespace(), Name: obj.GetName()}
	if err != nil {
		t.book.wrote("", ref, "", "")
		return
	}
	db := ""
	if rt := traceOf(ctx); rt != nil {
		db = rt.database.Name
		if rt.yourCode {
			what = "your code's " + what
		}
	}
	t.book.wrote(db, ref, obj.GetResourceVersion(), what)
}

// writing notes a write to obj under way, which own ends.
func (t *traceFuncs) writing(obj client.Object) {
	t.book.writingTo(ObjectRef{Kind: kindOf(obj), Namespace: obj.GetNamespace(), Name: obj.GetName()})
}

// update traces an update as an action, but one of the Database that adds
// or removes the finalizer as the finalizer step, as patch does: learner
// code written after the kubebuilder book updates rather than patches.
func (t *traceFuncs) update(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
	db, isDB := obj.(*dbv1.Database)
	had := isDB && t.hadFinalizer(ctx, db)
	began := time.Now()
	t.writing(obj)
	err := c.Update(ctx, obj, opts...)
	if isDB && err == nil && t.finalizerStep(ctx, db, had, began) {
		t.own(ctx, obj, "finalizer update", nil)
		return nil
	}
	t.own(ctx, obj, "update", err)
	t.action(ctx, c, "update", obj, outcomeOf(err, OutcomeUpdated), began, err, "")
	if err == nil {
		snapshotStep(ctx, obj, nil)
	}
	return err
}

func (t *traceFuncs) delete(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
	began := time.Now()
	err := c.Delete(ctx, obj, opts...)
	t.action(ctx, c, "delete", obj, outcomeOf(err, OutcomeDeleted), began, err, "")
	return err
}

// patch traces a patch of a child as an action, and a patch of the
// Database (the reconciler patches only its finalizers) as the finalizer
// step it amounts to.
func (t *traceFuncs) patch(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	db, isDB := obj.(*dbv1.Database)
	had := false
	if isDB {
		had = t.hadFinalizer(ctx, db)
	}
	began := time.Now()
	t.writing(obj)
	err := c.Patch(ctx, obj, patch, opts...)
	if isDB && err == nil && t.finalizerStep(ctx, db, had, began) {
		t.own(ctx, obj, "finalizer patch", nil)
		return nil
	}
	t.own(ctx, obj, "patch", err)
	t.action(ctx, c, "patch", obj, outcomeOf(err, OutcomeUpdated), began, err, "")
	return err
}

// finalizerStep records the finalizer step a successful write of db
// amounts to, given whether it had the finalizer before, and reports
// whether there was one.
func (t *traceFuncs) finalizerStep(ctx context.Context, db *dbv1.Database, had bool, began time.Time) bool {
	rt := traceOf(ctx)
	if rt == nil {
		return false
	}
	switch has := controllerutil.ContainsFinalizer(db, Finalizer); {
	case has && !had:
		rt.step(Step{Type: StepFinalizer, Phase: "added", Duration: time.Since(began),
			Message: "finalizer " + Finalizer + " added: a delete will now wait for the final snapshot"})
	case had && !has:
		rt.step(Step{Type: StepFinalizer, Phase: "removed", Duration: time.Since(began),
			Message: "finalizer removed: the API server deletes the Database, the garbage collector its children"})
	default:
		return false
	}
	return true
}

func (t *traceFuncs) hadFinalizer(ctx context.Context, db *dbv1.Database) bool {
	var old dbv1.Database
	if err := t.before.Get(ctx, client.ObjectKeyFromObject(db), &old); err != nil {
		return false
	}
	return controllerutil.ContainsFinalizer(&old, Finalizer)
}

func (t *traceFuncs) subResourcePatch(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	based := obj.GetResourceVersion()
	t.writing(obj)
	err := t.status(ctx, sub, obj, func() error { return c.SubResource(sub).Patch(ctx, obj, patch, opts...) })
	if obj.GetResourceVersion() == based && err == nil {
		t.own(ctx, obj, "", errors.New("unchanged")) // nothing written: no event follows
		return err
	}
	t.own(ctx, obj, sub+" patch", err)
	return err
}

func (t *traceFuncs) subResourceUpdate(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	based := obj.GetResourceVersion()
	t.writing(obj)
	err := t.status(ctx, sub, obj, func() error { return c.SubResource(sub).Update(ctx, obj, opts...) })
	if obj.GetResourceVersion() == based && err == nil {
		t.own(ctx, obj, "", errors.New("unchanged")) // nothing written: no event follows
		return err
	}
	t.own(ctx, obj, sub+" update", err)
	return err
}

// status traces a status write: the conditions it changed, compared with
// the status the reconciler had read, and how many writes this makes.
func (t *traceFuncs) status(ctx context.Context, sub string, obj client.Object, write func() error) error {
	db, ok := obj.(*dbv1.Database)
	rt := traceOf(ctx)
	if !ok || sub != "status" || rt == nil {
		return write()
	}
	var old dbv1.Database
	_ = t.before.Get(ctx, client.ObjectKeyFromObject(db), &old)
	// The write may fail and leave obj as the caller set it; what it was
	// based on is taken before.
	based := db.ResourceVersion
	began := time.Now()
	err := write()
	changes := conditionChanges(old.Status.Conditions, db.Status.Conditions)
	fields := statusFields(old.Status, db.Status)
	if err != nil {
		s := Step{Type: StepStatus, Conditions: changes, Fields: fields, Error: errText(err), Duration: time.Since(began)}
		if apierrors.IsConflict(err) {
			s.Conflict, s.ResourceVersion, s.Message = true, based, conflictMessage("Database", based)
		}
		rt.step(s)
		return err
	}
	rt.statusWritten = true
	s := Step{Type: StepStatus, Conditions: changes, Fields: fields, Generation: db.Generation,
		ObservedGeneration: db.Status.ObservedGeneration, StatusWrites: t.book.statusWritten(client.ObjectKeyFromObject(db)),
		Duration: time.Since(began), Message: statusMessage(fields)}
	if based != "" && db.ResourceVersion == based {
		// The API server stores nothing for a write that changes nothing:
		// the write is made (and counted), but wakes no one.
		s.Unchanged, s.ResourceVersion = true, based
		s.Message = "status written, but it equalled the stored one: the API server kept resourceVersion " + based + ", so no watch event follows"
	}
	rt.step(s)
	return nil
}

// statusMessage says what a status write changed, field by field.
func statusMessage(fields []FieldChange) string {
	if len(fields) == 0 {
		return "status written; no field changed"
	}
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = f.Field + " " + orNone(f.From) + "→" + orNone(f.To)
	}
	return "status written: " + strings.Join(parts, ", ")
}

func orNone(v string) string {
	if v == "" {
		return "∅"
	}
	return v
}

// conflictMessage explains a 409 Conflict to a learner: optimistic locking
// refused a write based on an old read, and only a fresh read can fix it.
func conflictMessage(kind, resourceVersion string) string {
	based := ""
	if resourceVersion != "" {
		based = " (resourceVersion " + resourceVersion + ")"
	}
	return "409 Conflict: the " + kind + " changed since this reconcile read it" + based +
		". The API server takes a write only if it is based on the current version (optimistic locking), so nothing was written. " +
		"The next reconcile, queued by the change's own watch event or by the retry of this error, reads the object again and decides afresh."
}

// statusFields lists every field of the status that differs between prev
// and next, the conditions one by one: a flipped status as
// "conditions[Ready] False→True", any other part of a condition that moved
// as "conditions[Ready].reason", ".message", ".observedGeneration" or
// ".lastTransitionTime".
func statusFields(prev, next dbv1.DatabaseStatus) []FieldChange {
	var out []FieldChange
	add := func(field, from, to string) {
		if from != to {
			out = append(out, FieldChange{Field: field, From: from, To: to})
		}
	}
	num := func(n int64) string { return strconv.FormatInt(n, 10) }
	add("observedGeneration", num(prev.ObservedGeneration), num(next.ObservedGeneration))
	add("readyReplicas", num(int64(prev.ReadyReplicas)), num(int64(next.ReadyReplicas)))
	add("endpoint", prev.Endpoint, next.Endpoint)
	add("secretName", prev.SecretName, next.SecretName)
	snap := func(s *dbv1.SnapshotReference) string {
		if s == nil {
			return ""
		}
		return s.Name
	}
	add("lastSnapshot", snap(prev.LastSnapshot), snap(next.LastSnapshot))
	for _, c := range next.Conditions {
		at := "conditions[" + c.Type + "]"
		o := meta.FindStatusCondition(prev.Conditions, c.Type)
		if o == nil {
			add(at, "", string(c.Status))
			continue
		}
		add(at, string(o.Status), string(c.Status))
		add(at+".reason", o.Reason, c.Reason)
		add(at+".message", o.Message, c.Message)
		add(at+".observedGeneration", num(o.ObservedGeneration), num(c.ObservedGeneration))
		add(at+".lastTransitionTime", rfc3339(o.LastTransitionTime), rfc3339(c.LastTransitionTime))
	}
	for _, c := range prev.Conditions {
		if meta.FindStatusCondition(next.Conditions, c.Type) == nil {
			add("conditions["+c.Type+"]", string(c.Status), "")
		}
	}
	return out
}

// action reports one change attempted on the cluster and its outcome.
func (t *traceFuncs) action(ctx context.Context, c client.Client, verb string, obj client.Object, outcome Outcome, began time.Time, err error, msg string) {
	rt := traceOf(ctx)
	if rt == nil {
		return
	}
	kind := ""
	if gvk, gerr := c.GroupVersionKindFor(obj); gerr == nil {
		kind = gvk.Kind
	}
	s := Step{Type: StepAction, Action: verb, Target: &ObjectRef{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()},
		Outcome: outcome, Message: msg, Duration: time.Since(began)}
	if err != nil && outcome == OutcomeError {
		s.Error = errText(err)
	}
	if apierrors.IsConflict(err) {
		// A failed write leaves obj as the caller sent it: its
		// resourceVersion is the one the write was based on.
		s.Conflict, s.ResourceVersion, s.Message = true, obj.GetResourceVersion(), conflictMessage(kind, obj.GetResourceVersion())
	}
	rt.step(s)
}

func outcomeOf(err error, ok Outcome) Outcome {
	if err != nil {
		return OutcomeError
	}
	return ok
}

// conditionChanges lists the conditions of next that differ from prev,
// a rewritten lastTransitionTime included.
func conditionChanges(prev, next []metav1.Condition) []ConditionChange {
	var out []ConditionChange
	for _, c := range next {
		old := meta.FindStatusCondition(prev, c.Type)
		if old != nil && equality.Semantic.DeepEqual(*old, c) {
			continue
		}
		ch := ConditionChange{Type: c.Type, To: string(c.Status), Reason: c.Reason, Message: c.Message, Transition: true,
			LastTransitionTime: rfc3339(c.LastTransitionTime)}
		if old != nil {
			ch.From = string(old.Status)
			ch.Transition = old.Status != c.Status
			ch.FromLastTransitionTime = rfc3339(old.LastTransitionTime)
		}
		out = append(out, ch)
	}
	return out
}

func rfc3339(t metav1.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// withoutWatch lends a manager's client (which cannot watch) the Watch
// method the interceptor's client type requires; the reconciler never
// watches through it.
type withoutWatch struct{ client.Client }

func (withoutWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("the reconciler's client does not watch")
}

// errText is an error as a step shows it: a permission oplab lacks in words
// (verb, resource, namespace, where to fix it), anything else as it is.
func errText(err error) string { return permission.Explain(err).Error() }
