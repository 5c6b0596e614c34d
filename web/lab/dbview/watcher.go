package dbview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// Publisher receives the view model of a Database, encoded as JSON, whenever
// it changes, and nil when the Database is gone: the view with its rendered
// card (state), and the view alone (view), which is all an older state
// needs to keep, since the card can be rendered again from it. The stream
// recorder implements it.
type Publisher interface {
	PublishRendered(obj controller.ObjectRef, state, view json.RawMessage)
}

// Renderer draws view models as the HTML fragments the lab page swaps in
// (lab.Fragments), so the page, the stream and the replay share one
// renderer.
type Renderer interface {
	RenderDatabase(Database) (string, error)
	RenderSnapshot(Snapshot) (string, error)
}

// Options configures a Watcher.
type Options struct {
	// Cache is the informer cache to watch. The Watcher registers its
	// informers; the caller starts the cache.
	Cache cache.Cache
	// Publisher receives every changed view model.
	Publisher Publisher
	// Render, when set, renders each changed view model, published with
	// it (PublishedDatabase, PublishedSnapshot).
	Render Renderer
	// Watched filters namespaces; nil watches all of them.
	Watched func(namespace string) bool
	// Secrets, when set, are the per-namespace caches the Secrets are
	// watched in (as metadata), instead of Cache: an oplab confined to its
	// instance's namespaces may not watch Secrets cluster-wide.
	Secrets *controller.NamespaceCaches
	// YourCode, when set, says whether the learner's own reconciler has
	// namespace now (controller.Runner.HandedOver): a Database it let go
	// without a snapshot is its doing, and the lab says so.
	YourCode func(namespace string) bool
	// Now is the clock used to stamp condition history; nil means time.Now.
	Now    func() time.Time
	Logger logr.Logger
}

// signal is what an informer handler hands to the owner goroutine: either a
// Database as one watch event carried it, or a namespace whose other objects
// changed.
type signal struct {
	db   *v1alpha1.Database
	gone types.NamespacedName
	// final is the gone Database as its delete event carried it.
	final     *v1alpha1.Database
	namespace string
	// forget names a namespace whose session ended.
	forget string
	// retry marks the owner's own signal to look at namespace again.
	retry bool
}

// retryAfter is how long a namespace whose Secret cache has not synced
// waits before its Databases are rebuilt again, doubled at each try up to
// retryMax: a cache refused for good (its RoleBinding gone) costs a few
// lists every few seconds, not four times a second.
const (
	retryAfter = 250 * time.Millisecond
	retryMax   = 5 * time.Second
	// retrySay is the try at which the wait is logged, once.
	retrySay = 5
)

// maxLost is how many Databases deleted without a snapshot the lab lists
// per namespace (the newest); maxLostAll bounds them across namespaces, in
// case namespaces go without a Forget. endedFor is how long a namespace
// whose session ended is not listed any more: its Databases go with it,
// without snapshots, and nobody is there to see them.
const (
	maxLost    = 20
	maxLostAll = 2000
	endedFor   = 15 * time.Minute
)

type query struct {
	namespace string
	reply     chan listing
}

// listing is what the lab shows of one namespace.
type listing struct {
	databases []Database
	snapshots []Snapshot
}

// Watcher keeps each Database's view model current, and the view models of
// the final snapshots that outlived their Database. One goroutine owns the
// condition histories and the latest view models; informer handlers and
// page handlers reach it through channels.
type Watcher struct {
	opts    Options
	signals chan signal
	queries chan query
	done    <-chan struct{}
}

// NewWatcher registers the informers Start needs on opts.Cache.
func NewWatcher(ctx context.Context, opts Options) (*Watcher, error) {
	if opts.Cache == nil || opts.Publisher == nil {
		return nil, errors.New("state watcher options: Cache and Publisher are required")
	}
	if opts.Watched == nil {
		opts.Watched = func(string) bool { return true }
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	w := &Watcher{opts: opts, signals: make(chan signal, 1024), queries: make(chan query), done: ctx.Done()}
	if err := w.register(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// Watched lists the kinds the watcher reads. Secrets are metadata only, so
// their data never enters this process.
func Watched() []client.Object {
	return []client.Object{
		&v1alpha1.Database{}, &appsv1.StatefulSet{}, &corev1.Pod{}, &corev1.Service{},
		SecretMeta(), &corev1.ConfigMap{}, &corev1.Event{},
	}
}

// SecretMeta is a Secret as metadata only: how the watcher reads Secrets.
func SecretMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return m
}

func (w *Watcher) register(ctx context.Context) error {
	for _, obj := range Watched() {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok && m.Kind == "Secret" && w.opts.Secrets != nil {
			if err := w.opts.Secrets.AddEventHandler(w.childHandler()); err != nil {
				return fmt.Errorf("add event handler for Secrets: %w", err)
			}
			continue
		}
		inf, err := w.opts.Cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("get informer for %T: %w", obj, err)
		}
		h := w.childHandler()
		if _, ok := obj.(*v1alpha1.Database); ok {
			h = w.databaseHandler()
		}
		if _, err := inf.AddEventHandler(h); err != nil {
			return fmt.Errorf("add event handler for %T: %w", obj, err)
		}
	}
	return nil
}

// databaseHandler forwards each Database exactly as its watch event carried
// it, in order, because the condition history must see every version.
func (w *Watcher) databaseHandler() toolscache.ResourceEventHandler {
	send := func(obj any) {
		db, ok := obj.(*v1alpha1.Database)
		if ok && w.opts.Watched(db.Namespace) {
			w.send(signal{db: db})
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { send(obj) },
		UpdateFunc: func(_, obj any) { send(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if o, ok := obj.(client.Object); ok && w.opts.Watched(o.GetNamespace()) {
				db, _ := obj.(*v1alpha1.Database)
				w.send(signal{gone: client.ObjectKeyFromObject(o), final: db})
			}
		},
	}
}

// childHandler marks the namespace of any other changed object: a lab
// namespace holds at most a handful of Databases, so rebuilding them all is
// cheaper than working out which one a Pod or an Event belongs to.
func (w *Watcher) childHandler() toolscache.ResourceEventHandler {
	send := func(obj any) {
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if o, ok := obj.(client.Object); ok && w.opts.Watched(o.GetNamespace()) {
			w.send(signal{namespace: o.GetNamespace()})
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    send,
		UpdateFunc: func(_, obj any) { send(obj) },
		DeleteFunc: send,
	}
}

// send blocks only while the owner goroutine is busy; informers buffer
// their notifications, so a slow rebuild delays the view, never the cache.
func (w *Watcher) send(s signal) {
	select {
	case w.signals <- s:
	case <-w.done:
	}
}

// Databases returns the current view models of the Databases in namespace,
// sorted by name.
func (w *Watcher) Databases(ctx context.Context, namespace string) ([]Database, error) {
	l, err := w.query(ctx, namespace)
	return l.databases, err
}

// Snapshots returns the final snapshots in namespace whose Database is gone,
// and the Databases deleted without one (Snapshot.Lost), sorted by name.
func (w *Watcher) Snapshots(ctx context.Context, namespace string) ([]Snapshot, error) {
	l, err := w.query(ctx, namespace)
	return l.snapshots, err
}

// Forget drops what the watcher remembers of namespace beyond the cluster,
// the Databases deleted there without a snapshot, as its session ends; for
// a while after, the Databases that go with the namespace are not listed.
func (w *Watcher) Forget(namespace string) {
	w.send(signal{forget: namespace})
}

func (w *Watcher) query(ctx context.Context, namespace string) (listing, error) {
	q := query{namespace: namespace, reply: make(chan listing, 1)}
	select {
	case w.queries <- q:
	case <-ctx.Done():
		return listing{}, fmt.Errorf("query lab state: %w", ctx.Err())
	case <-w.done:
		return listing{}, errors.New("query lab state: watcher stopped")
	}
	return <-q.reply, nil
}

// owner is the goroutine state: histories and the latest views by Database.
type owner struct {
	w         *Watcher
	histories map[types.NamespacedName]*history
	views     map[types.NamespacedName]Database
	published map[types.NamespacedName][]byte
	dirtyDB   map[types.NamespacedName]bool
	dirtyNS   map[string]bool
	// kept and keptJSON are the snapshots whose Database is gone, as last
	// published; dirtyKept marks the namespaces to look at again.
	kept      map[types.NamespacedName]Snapshot
	keptJSON  map[types.NamespacedName][]byte
	dirtyKept map[string]bool
	// gone holds, by namespace, the Databases whose delete came since the
	// namespace was last looked at, as they went; lost the ones that went
	// without a snapshot, by their snapshot's key; ended the namespaces
	// whose session ended, and when.
	gone  map[string][]*v1alpha1.Database
	lost  map[types.NamespacedName]Snapshot
	ended map[string]time.Time
	// specs is each Database's spec as YAML, by UID and generation: the
	// spec changes only with metadata.generation, while a Database is
	// rebuilt on every change of its status or children, and rendering
	// YAML was half the cost of a rebuild.
	specs map[types.NamespacedName]specCache
	// retrying holds the namespaces with a retry signal on its way; tries
	// counts each one's tries since its cache last answered.
	retrying map[string]bool
	tries    map[string]int
}

type specCache struct {
	uid        types.UID
	generation int64
	yaml       string
}

// specText returns db's spec as YAML, rendered again only when db is
// another object or its generation moved.
func (o *owner) specText(key types.NamespacedName, db *v1alpha1.Database) string {
	if c, ok := o.specs[key]; ok && c.uid == db.UID && c.generation == db.Generation {
		return c.yaml
	}
	c := specCache{uid: db.UID, generation: db.Generation, yaml: specYAML(db.Spec)}
	o.specs[key] = c
	return c.yaml
}

// Run owns the watcher's state until ctx is done.
func (w *Watcher) Run(ctx context.Context) {
	o := &owner{
		w: w, histories: map[types.NamespacedName]*history{}, views: map[types.NamespacedName]Database{},
		published: map[types.NamespacedName][]byte{}, dirtyDB: map[types.NamespacedName]bool{}, dirtyNS: map[string]bool{},
		kept: map[types.NamespacedName]Snapshot{}, keptJSON: map[types.NamespacedName][]byte{}, dirtyKept: map[string]bool{},
		gone: map[string][]*v1alpha1.Database{}, lost: map[types.NamespacedName]Snapshot{}, ended: map[string]time.Time{},
		specs: map[types.NamespacedName]specCache{}, retrying: map[string]bool{}, tries: map[string]int{},
	}
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-w.signals:
			o.take(s)
			o.drain()
			o.flush(ctx)
		case q := <-w.queries:
			q.reply <- listing{databases: o.list(q.namespace), snapshots: o.listKept(q.namespace)}
			o.answerQueries()
		}
	}
}

// drain takes every signal already waiting, so a burst of events costs one
// rebuild.
func (o *owner) drain() {
	for {
		select {
		case s := <-o.w.signals:
			o.take(s)
		default:
			return
		}
	}
}

func (o *owner) take(s signal) {
	switch {
	case s.db != nil:
		key := client.ObjectKeyFromObject(s.db)
		h := o.histories[key]
		if h == nil {
			h = &history{}
			o.histories[key] = h
		}
		h.observe(string(s.db.UID), s.db.Status.Conditions, o.w.opts.Now())
		o.dirtyDB[key] = true
		o.dirtyKept[key.Namespace] = true
	case s.gone.Name != "":
		// A snapshot whose Database just went is what the lab must now show
		// on its own.
		o.dirtyDB[s.gone] = true
		o.dirtyKept[s.gone.Namespace] = true
		if s.final != nil && !o.isEnded(s.gone.Namespace) {
			o.gone[s.gone.Namespace] = append(o.gone[s.gone.Namespace], s.final)
		}
	case s.forget != "":
		o.forgetNamespace(s.forget)
	default:
		if s.retry {
			delete(o.retrying, s.namespace)
		}
		o.dirtyNS[s.namespace] = true
		o.dirtyKept[s.namespace] = true
	}
}

// flush rebuilds every dirty Database from the cache and publishes those
// whose view changed.
func (o *owner) flush(ctx context.Context) {
	for ns := range o.dirtyNS {
		var list v1alpha1.DatabaseList
		if err := o.w.opts.Cache.List(ctx, &list, client.InNamespace(ns)); err != nil {
			o.w.opts.Logger.Error(err, "Failed to list Databases", "namespace", ns)
			continue
		}
		for _, db := range list.Items {
			o.dirtyDB[client.ObjectKeyFromObject(&db)] = true
		}
	}
	clear(o.dirtyNS)
	related := map[string]*Related{}
	for key := range o.dirtyDB {
		o.rebuild(ctx, key, related)
		// A flush after a burst across many namespaces can take seconds
		// on a busy machine: a query waits for one rebuild, not all.
		o.answerQueries()
	}
	clear(o.dirtyDB)
	for ns := range o.dirtyKept {
		o.refreshKept(ctx, ns)
		o.answerQueries()
	}
	clear(o.dirtyKept)
}

// answerQueries answers the queries waiting now, from the views as they
// stand, without waiting for more.
func (o *owner) answerQueries() {
	for {
		select {
		case q := <-o.w.queries:
			q.reply <- listing{databases: o.list(q.namespace), snapshots: o.listKept(q.namespace)}
		default:
			return
		}
	}
}

// forgetNamespace drops the lost Databases of ns, its session ended. Its
// timeline went with it, so nothing is published.
func (o *owner) forgetNamespace(ns string) {
	now := o.w.opts.Now()
	for n, t := range o.ended {
		if now.Sub(t) > endedFor {
			delete(o.ended, n)
		}
	}
	o.ended[ns] = now
	delete(o.gone, ns)
	for key, s := range o.kept {
		if key.Namespace == ns && s.Lost {
			delete(o.kept, key)
			delete(o.keptJSON, key)
		}
	}
	for key := range o.lost {
		if key.Namespace == ns {
			delete(o.lost, key)
		}
	}
}

func (o *owner) isEnded(ns string) bool {
	t, ok := o.ended[ns]
	return ok && o.w.opts.Now().Sub(t) <= endedFor
}

func (o *owner) rebuild(ctx context.Context, key types.NamespacedName, related map[string]*Related) {
	ref := controller.ObjectRef{Kind: "Database", Namespace: key.Namespace, Name: key.Name}
	var db v1alpha1.Database
	err := o.w.opts.Cache.Get(ctx, key, &db)
	if apierrors.IsNotFound(err) {
		o.forget(key, ref)
		return
	}
	if err != nil {
		o.w.opts.Logger.Error(err, "Failed to read Database", "database", key)
		return
	}
	rel := related[key.Namespace]
	if rel == notSynced {
		return
	}
	if rel == nil {
		r, err := o.related(ctx, key.Namespace)
		if errors.Is(err, controller.ErrNotSynced) {
			// The view stays as it was rather than show a Secret as
			// missing; the owner goroutine never waits for a sync.
			related[key.Namespace] = notSynced
			o.retry(key.Namespace)
			return
		}
		if err != nil {
			o.w.opts.Logger.Error(err, "Failed to read Database children", "database", key)
			return
		}
		delete(o.tries, key.Namespace)
		rel, related[key.Namespace] = r, r
	}
	view := build(&db, *rel, o.histories[key], o.specText(key, &db))
	o.publish(key, ref, view)
}

// retry rebuilds ns's Databases again after retryAfter, once however many
// of them asked.
func (o *owner) retry(ns string) {
	if o.retrying[ns] {
		return
	}
	o.retrying[ns] = true
	o.tries[ns]++
	n := o.tries[ns]
	if n == retrySay {
		o.w.opts.Logger.V(1).Info("Waiting for a namespace's Secret cache to sync; its cards stay as they were", "namespace", ns, "tries", n)
	}
	wait := retryAfter << min(n-1, 5)
	time.AfterFunc(min(wait, retryMax), func() { o.w.send(signal{namespace: ns, retry: true}) })
}

// notSynced marks, within one flush, a namespace whose Secret cache has
// not synced, so its other Databases do not list its children again.
var notSynced = &Related{}

func (o *owner) forget(key types.NamespacedName, ref controller.ObjectRef) {
	delete(o.histories, key)
	delete(o.specs, key)
	delete(o.views, key)
	if _, ok := o.published[key]; !ok {
		return
	}
	delete(o.published, key)
	o.w.opts.Publisher.PublishRendered(ref, nil, nil)
}

// publish sends view unless it is what was sent last: Pod and Event churn
// often changes nothing the lab shows.
func (o *owner) publish(key types.NamespacedName, ref controller.ObjectRef, view Database) {
	o.views[key] = view
	b, err := json.Marshal(view)
	if err != nil {
		o.w.opts.Logger.Error(err, "Failed to encode Database state", "database", key)
		return
	}
	if string(b) == string(o.published[key]) {
		return
	}
	o.published[key] = b
	var html string
	if r := o.w.opts.Render; r != nil {
		// Rendered only when the view changed: most rebuilds change nothing.
		if html, err = r.RenderDatabase(view); err != nil {
			o.w.opts.Logger.Error(err, "Failed to render Database card", "database", key)
		}
	}
	o.w.opts.Publisher.PublishRendered(ref, withHTML(b, html), b)
}

func (o *owner) related(ctx context.Context, ns string) (*Related, error) {
	var (
		sts  appsv1.StatefulSetList
		pods corev1.PodList
		svcs corev1.ServiceList
		cms  corev1.ConfigMapList
		evs  corev1.EventList
	)
	secrets := &metav1.PartialObjectMetadataList{}
	secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	for _, l := range []client.ObjectList{&sts, &pods, &svcs, secrets, &cms, &evs} {
		if l == secrets && o.w.opts.Secrets != nil {
			if err := o.w.opts.Secrets.List(ctx, l, ns); err != nil {
				return nil, fmt.Errorf("list Secrets in %s: %w", ns, err)
			}
			continue
		}
		if err := o.w.opts.Cache.List(ctx, l, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("list %T in %s: %w", l, ns, err)
		}
	}
	return &Related{
		StatefulSets: sts.Items, Pods: pods.Items, Services: svcs.Items,
		Secrets: secrets.Items, ConfigMaps: cms.Items, Events: evs.Items,
	}, nil
}

func (o *owner) list(ns string) []Database {
	out := []Database{}
	for key, v := range o.views {
		if key.Namespace == ns {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b Database) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// withHTML adds the rendered fragment to a view model's JSON object as its
// "html" field (PublishedDatabase and PublishedSnapshot are that shape), so
// the view model, already encoded for the dedupe above, is not encoded twice.
func withHTML(view []byte, html string) json.RawMessage {
	if html == "" || len(view) < 2 || view[len(view)-1] != '}' {
		return view
	}
	h, err := json.Marshal(html)
	if err != nil {
		return view
	}
	out := make([]byte, 0, len(view)+len(h)+9)
	out = append(out, view[:len(view)-1]...)
	if len(view) > 2 {
		out = append(out, ',')
	}
	out = append(out, `"html":`...)
	out = append(out, h...)
	return append(out, '}')
}
