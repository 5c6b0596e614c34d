package dbview

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// maxEvents is how many of a Database's Events the view keeps (the newest).
const maxEvents = 20

// Related is everything in a Database's namespace that the view may show.
// Secrets are metadata only: the watcher never reads Secret data.
type Related struct {
	StatefulSets []appsv1.StatefulSet
	Pods         []corev1.Pod
	Services     []corev1.Service
	Secrets      []metav1.PartialObjectMetadata
	ConfigMaps   []corev1.ConfigMap
	Events       []corev1.Event
}

// keptNote is what the lab says about a snapshot that outlived its Database.
const keptNote = "nothing owns it (no ownerReference), so the garbage collector left it when its Database was deleted"

// keptSnapshots picks the final snapshot ConfigMaps whose Database is gone,
// sorted by name. A ConfigMap counts as a snapshot when it is named as a
// Database's snapshot and carries no Database label or that Database's
// (isSnapshotOf).
func keptSnapshots(cms []corev1.ConfigMap, databases map[string]bool) []Snapshot {
	out := []Snapshot{}
	for _, cm := range cms {
		db := snapshotDatabase(cm)
		if db == "" || databases[db] {
			continue
		}
		out = append(out, snapshotView(cm, db))
	}
	slices.SortFunc(out, func(a, b Snapshot) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// lostSnapshot is what the lab lists for db, gone without a final
// snapshot (seen at seen): the snapshot it should have left, and why none
// was written, from the object as it went. A hidden pitfall is not named.
func lostSnapshot(db *v1alpha1.Database, seen time.Time, yourCode bool) Snapshot {
	note := "its finalizer came off before a final snapshot was written (removed by hand or by the escape hatch, or as its namespace was deleted) or was never added, so nothing held the delete and its data is lost"
	switch {
	case yourCode:
		// The learner's own reconciler had the namespace: what it did with
		// the finalizer is what happened, not a hand or the escape hatch.
		note = "your code reconciled it when it was deleted: it took the finalizer off, or never added one, without writing the final snapshot first, so nothing held the delete and its data is lost"
	case controller.PitfallOf(db) == controller.PitfallNoFinalizer && !controller.PitfallHiddenOf(db):
		note = "the no-finalizer pitfall was on: the controller took its finalizer off instead of writing a final snapshot, so nothing held the delete and its data is lost"
	}
	return Snapshot{
		Namespace: db.Namespace, Name: controller.SnapshotName(db.Name), Database: db.Name, DatabaseUID: string(db.UID),
		Generation: db.Generation, Time: seen, Note: note, Lost: true,
	}
}

// snapshotTaken reports whether db, as it was deleted, had its final
// snapshot written: its status names one (written before the finalizer
// lets go), or a snapshot ConfigMap records its uid (the status may be read
// from an older version when the watch missed the delete), or, recording
// no uid (the learner's own code may not), was made in db's lifetime.
func snapshotTaken(db *v1alpha1.Database, cms []corev1.ConfigMap) bool {
	if db.Status.LastSnapshot != nil {
		return true
	}
	for _, cm := range cms {
		if !isSnapshotOf(cm, db.Name) {
			continue
		}
		if uid, ok := cm.Data["uid"]; ok {
			if uid == string(db.UID) {
				return true
			}
			continue
		}
		if !cm.CreationTimestamp.Before(&db.CreationTimestamp) {
			return true
		}
	}
	return false
}

// isSnapshotOf reports whether cm is db's final snapshot: named so, and
// labelled for db, as oplab's controller and the code page's starters
// label it, or not labelled at all, as a learner's own code may write it
// (the challenges judge it by its name too). A ConfigMap labelled for
// another Database is never one.
func isSnapshotOf(cm corev1.ConfigMap, db string) bool {
	label, labelled := cm.Labels[controller.LabelDatabase]
	return cm.Name == controller.SnapshotName(db) && (!labelled || label == db)
}

// snapshotDatabase is the Database cm is the final snapshot of, or "".
func snapshotDatabase(cm corev1.ConfigMap) string {
	db, ok := cm.Labels[controller.LabelDatabase]
	if !ok {
		db, _ = strings.CutSuffix(cm.Name, controller.SnapshotName(""))
	}
	if db == "" || !isSnapshotOf(cm, db) {
		return ""
	}
	return db
}

// withLost lists kept and the lost Databases together, sorted by name. A
// lost Database takes the place of the kept snapshot of its name, which is
// then an earlier Database's. A lost one that a snapshot answers after all,
// its own seen late or a later Database's of that name, is not shown but
// returned in answered, to be forgotten.
func withLost(kept, lost []Snapshot, cms []corev1.ConfigMap) (shown, answered []Snapshot) {
	byName := map[string]Snapshot{}
	for _, s := range kept {
		byName[s.Name] = s
	}
	for _, l := range lost {
		if answeredBy(l, cms) {
			answered = append(answered, l)
			continue
		}
		byName[l.Name] = l
	}
	shown = make([]Snapshot, 0, len(byName))
	for _, s := range byName {
		shown = append(shown, s)
	}
	slices.SortFunc(shown, func(a, b Snapshot) int { return cmp.Compare(a.Name, b.Name) })
	return shown, answered
}

// answeredBy reports whether a snapshot ConfigMap answers the lost l: it
// records l's Database, or was taken after l's went.
func answeredBy(l Snapshot, cms []corev1.ConfigMap) bool {
	for _, cm := range cms {
		if !isSnapshotOf(cm, l.Database) {
			continue
		}
		if cm.Data["uid"] == l.DatabaseUID {
			return true
		}
		if t, err := time.Parse(time.RFC3339, cm.Data["time"]); err == nil && t.After(l.Time) {
			return true
		}
	}
	return false
}

func snapshotView(cm corev1.ConfigMap, db string) Snapshot {
	s := Snapshot{Namespace: cm.Namespace, Name: cm.Name, Database: db, DatabaseUID: cm.Data["uid"], Note: keptNote}
	if g, err := strconv.ParseInt(cm.Data["generation"], 10, 64); err == nil {
		s.Generation = g
	}
	if t, err := time.Parse(time.RFC3339, cm.Data["time"]); err == nil {
		s.Time = t
	}
	return s
}

// build makes the view model of db from the objects around it; spec is
// db's spec as YAML (specYAML), which the watcher keeps per generation.
func build(db *v1alpha1.Database, rel Related, h *history, spec string) Database {
	v := Database{
		Namespace: db.Namespace, Name: db.Name, UID: string(db.UID),
		Engine: string(db.Spec.Engine), Version: db.Spec.Version, Replicas: db.Spec.Replicas,
		Storage:            db.Spec.Storage.String(),
		SpecYAML:           spec,
		Pitfall:            pitfallShown(db),
		Pods:               controller.PodsModeOf(db),
		Generation:         db.Generation,
		ObservedGeneration: db.Status.ObservedGeneration,
		Stale:              db.Generation != db.Status.ObservedGeneration,
		ReadyReplicas:      db.Status.ReadyReplicas,
		Endpoint:           db.Status.Endpoint,
		SecretName:         db.Status.SecretName,
		Finalizers:         append([]string{}, db.Finalizers...),
		Conditions:         []Condition{},
		Owned:              ownedTree(db.UID, rel),
		Unowned:            []Node{},
		Events:             events(db, rel),
	}
	if db.Status.LastSnapshot != nil {
		v.LastSnapshot = db.Status.LastSnapshot.Name
	}
	if db.DeletionTimestamp != nil {
		t := db.DeletionTimestamp.Time
		v.Terminating, v.DeletionTimestamp, v.HeldBy = true, &t, v.Finalizers
	}
	for _, c := range db.Status.Conditions {
		v.Conditions = append(v.Conditions, Condition{
			Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message,
			ObservedGeneration: c.ObservedGeneration, LastTransitionTime: c.LastTransitionTime.Time,
			History: append([]Change{}, h.of(c.Type)...),
		})
	}
	v.Unowned = snapshotNodes(db, controller.SnapshotName(db.Name), rel.ConfigMaps)
	return v
}

// specYAML renders the spec as a learner would write it.
func specYAML(spec v1alpha1.DatabaseSpec) string {
	b, err := yaml.Marshal(map[string]any{"spec": spec})
	if err != nil {
		return fmt.Sprintf("# cannot render spec: %v", err)
	}
	return string(b)
}

// snapshotNodes shows the final snapshot ConfigMap, which the controller
// deliberately does not own: it must outlive the Database.
func snapshotNodes(db *v1alpha1.Database, name string, cms []corev1.ConfigMap) []Node {
	for _, cm := range cms {
		if cm.Name != name || isOwnedBy(cm.OwnerReferences, db.UID) {
			continue
		}
		return []Node{{
			Kind: "ConfigMap", Name: cm.Name, Summary: fmt.Sprintf("%d keys", len(cm.Data)),
			Deleting: cm.DeletionTimestamp != nil,
			Note:     "final snapshot: not owned, so the garbage collector keeps it after the Database is gone",
		}}
	}
	return []Node{}
}

func isOwnedBy(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid {
			return true
		}
	}
	return false
}

// ownedTree builds the ownerReference tree below the object with uid. It
// follows references rather than names, so it shows what the garbage
// collector would actually delete.
//
// Every Database of a namespace is rebuilt from the same children, so the
// nodes are made, summaries and all, only for the children it owns: a
// hundred Databases created at once made this quadratic in Sprintf calls.
func ownedTree(uid types.UID, rel Related) []Node {
	type item struct {
		meta *metav1.ObjectMeta
		kind string
		i    int // index in rel's slice of that kind
	}
	all := make([]item, 0, len(rel.StatefulSets)+len(rel.Services)+len(rel.Secrets)+len(rel.ConfigMaps)+len(rel.Pods))
	for i := range rel.StatefulSets {
		all = append(all, item{&rel.StatefulSets[i].ObjectMeta, "StatefulSet", i})
	}
	for i := range rel.Services {
		all = append(all, item{&rel.Services[i].ObjectMeta, "Service", i})
	}
	for i := range rel.Secrets {
		all = append(all, item{&rel.Secrets[i].ObjectMeta, "Secret", i})
	}
	for i := range rel.ConfigMaps {
		all = append(all, item{&rel.ConfigMaps[i].ObjectMeta, "ConfigMap", i})
	}
	for i := range rel.Pods {
		all = append(all, item{&rel.Pods[i].ObjectMeta, "Pod", i})
	}
	var below func(owner types.UID, depth int) []Node
	below = func(owner types.UID, depth int) []Node {
		nodes := []Node{}
		if depth > 4 { // ownerReferences can form cycles; the real tree is shallow
			return nodes
		}
		for _, it := range all {
			if !isOwnedBy(it.meta.OwnerReferences, owner) {
				continue
			}
			n := Node{Kind: it.kind, Name: it.meta.Name, Summary: summary(rel, it.kind, it.i), Deleting: it.meta.DeletionTimestamp != nil}
			n.Children = below(it.meta.UID, depth+1)
			nodes = append(nodes, n)
		}
		slices.SortFunc(nodes, func(a, b Node) int {
			return cmp.Or(cmp.Compare(kindOrder(a.Kind), kindOrder(b.Kind)), cmp.Compare(a.Name, b.Name))
		})
		return nodes
	}
	return below(uid, 0)
}

// summary is the one-line state of the i-th child of kind in rel.
func summary(rel Related, kind string, i int) string {
	switch kind {
	case "StatefulSet":
		return statefulSetSummary(rel.StatefulSets[i])
	case "Service":
		return serviceSummary(rel.Services[i])
	case "ConfigMap":
		return fmt.Sprintf("%d keys", len(rel.ConfigMaps[i].Data))
	case "Pod":
		return podSummary(rel.Pods[i])
	}
	return "data hidden" // a Secret: only its metadata is ever read
}

func kindOrder(kind string) int {
	return slices.Index([]string{"StatefulSet", "Pod", "Service", "Secret", "ConfigMap"}, kind)
}

func statefulSetSummary(s appsv1.StatefulSet) string {
	want := int32(1)
	if s.Spec.Replicas != nil {
		want = *s.Spec.Replicas
	}
	return fmt.Sprintf("%d/%d ready", s.Status.ReadyReplicas, want)
}

func serviceSummary(s corev1.Service) string {
	if s.Spec.ClusterIP == corev1.ClusterIPNone {
		return "headless"
	}
	return s.Spec.ClusterIP
}

// podSummary reads as kubectl get pods does: the phase, or the reason a
// container waits (ImagePullBackOff, CrashLoopBackOff…) and its restarts,
// which say why a replica is not ready.
func podSummary(p corev1.Pod) string {
	s := podReadiness(p)
	if len(p.Status.ContainerStatuses) == 0 {
		return s
	}
	c := p.Status.ContainerStatuses[0]
	if w := c.State.Waiting; w != nil && w.Reason != "" {
		s += ": " + w.Reason
	}
	switch {
	case c.RestartCount == 1:
		s += ", 1 restart"
	case c.RestartCount > 1:
		s += fmt.Sprintf(", %d restarts", c.RestartCount)
	}
	return s
}

func podReadiness(p corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return string(p.Status.Phase) + ", ready"
		}
	}
	if p.Status.Phase == "" {
		return "Pending"
	}
	return string(p.Status.Phase) + ", not ready"
}

// events picks the Events about db, and the Warning Events about the
// StatefulSet and Pods it owns (a Pod the quota refused, an image that
// cannot be pulled: what explains a shortfall that the Database's own
// Events never mention), oldest first, keeping the newest few.
func events(db *v1alpha1.Database, rel Related) []Event {
	children := map[types.UID]string{}
	for _, s := range rel.StatefulSets {
		if isOwnedBy(s.OwnerReferences, db.UID) {
			children[s.UID] = "StatefulSet " + s.Name
		}
	}
	for _, p := range rel.Pods {
		for _, ref := range p.OwnerReferences {
			if strings.HasPrefix(children[ref.UID], "StatefulSet ") {
				children[p.UID] = "Pod " + p.Name
			}
		}
	}
	out := []Event{}
	for _, e := range rel.Events {
		ev := Event{Type: e.Type, Reason: e.Reason, Message: e.Message, Count: eventCount(e), Last: eventTime(e)}
		switch {
		case about(e, db):
		case e.Type == corev1.EventTypeWarning && children[e.InvolvedObject.UID] != "":
			ev.Object = children[e.InvolvedObject.UID]
		default:
			continue
		}
		out = append(out, ev)
	}
	slices.SortStableFunc(out, func(a, b Event) int { return a.Last.Compare(b.Last) })
	if len(out) > maxEvents {
		out = out[len(out)-maxEvents:]
	}
	return out
}

func about(e corev1.Event, db *v1alpha1.Database) bool {
	o := e.InvolvedObject
	if o.UID != "" {
		return o.UID == db.UID
	}
	return o.Kind == "Database" && o.Name == db.Name && o.Namespace == db.Namespace
}

// eventCount and eventTime read both event shapes: core/v1 recorders set
// count and lastTimestamp; events.k8s.io/v1 recorders set series and eventTime.
func eventCount(e corev1.Event) int32 {
	if e.Series != nil {
		return e.Series.Count
	}
	return max(e.Count, 1)
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// pitfallShown is the pitfall annotation's value as the learner may see it:
// controller.PitfallHidden when the Database's pitfall is hidden.
func pitfallShown(db *v1alpha1.Database) string {
	if controller.PitfallHiddenOf(db) {
		return controller.PitfallHidden
	}
	return db.Annotations[controller.PitfallAnnotation]
}
