// Package dbview turns what the cluster holds about a Database into the view
// model the lab shows: its spec, generation against observedGeneration, its
// conditions with every change seen, its finalizers, the tree of objects it
// owns and its Kubernetes Events. The Watcher keeps that model current from
// a controller-runtime cache and publishes it to the stream recorder.
package dbview

import "time"

// Database is the view model of one Database, as sent to the browser in
// "state" messages and rendered by the lab page. It never holds API objects
// and never holds Secret data.
type Database struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`

	// The spec, field by field and as the YAML a learner would write.
	Engine   string `json:"engine"`
	Version  string `json:"version"`
	Replicas int32  `json:"replicas"`
	Storage  string `json:"storage"`
	SpecYAML string `json:"specYAML"`
	// Pitfall is the pitfall annotation's value, "" when none is on, or
	// "hidden" (controller.PitfallHidden), whether one is on or not, when
	// the Database's pitfall is hidden from the learner.
	Pitfall string `json:"pitfall,omitempty"`
	// Pods is the Database's pods mode (controller.PodsAnnotation: a slow
	// start, an image pull error, a crash loop), "" for Pods Ready at once.
	Pods string `json:"pods,omitempty"`

	// Generation is metadata.generation; ObservedGeneration is
	// status.observedGeneration. Stale is true while they differ: the status
	// describes an older spec than the one stored.
	Generation         int64 `json:"generation"`
	ObservedGeneration int64 `json:"observedGeneration"`
	Stale              bool  `json:"stale"`

	ReadyReplicas int32  `json:"readyReplicas"`
	Endpoint      string `json:"endpoint,omitempty"`
	SecretName    string `json:"secretName,omitempty"`
	LastSnapshot  string `json:"lastSnapshot,omitempty"`

	Conditions []Condition `json:"conditions"`

	Finalizers []string `json:"finalizers"`
	// Terminating is true once metadata.deletionTimestamp is set; HeldBy
	// lists the finalizers that still hold the object from going away.
	Terminating       bool       `json:"terminating"`
	DeletionTimestamp *time.Time `json:"deletionTimestamp,omitempty"`
	HeldBy            []string   `json:"heldBy,omitempty"`

	// Owned is the ownerReference tree below the Database; Unowned lists
	// related objects it does not own (the final snapshot ConfigMap), which
	// the garbage collector therefore leaves behind.
	Owned   []Node `json:"owned"`
	Unowned []Node `json:"unowned"`

	// Events are the Kubernetes Events about the Database, and the Warning
	// Events about its StatefulSet and Pods, oldest first.
	Events []Event `json:"events"`
}

// Condition is one status condition with its history.
type Condition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	Reason             string    `json:"reason"`
	Message            string    `json:"message,omitempty"`
	ObservedGeneration int64     `json:"observedGeneration"`
	LastTransitionTime time.Time `json:"lastTransitionTime"`
	// History is every distinct value of the condition seen through the
	// watch, oldest first; the last entry is the current value.
	History []Change `json:"history"`
}

// Change is one value of a condition as seen at one moment.
type Change struct {
	Seen               time.Time `json:"seen"`
	Status             string    `json:"status"`
	Reason             string    `json:"reason"`
	Message            string    `json:"message,omitempty"`
	ObservedGeneration int64     `json:"observedGeneration"`
	// LastTransitionTime is the condition's lastTransitionTime as written.
	LastTransitionTime time.Time `json:"lastTransitionTime"`
	// Transition is true when the status flipped, which is when
	// lastTransitionTime should move; reason or message changes alone do
	// not. A lastTransitionTime that moves without a transition is a
	// rewrite (status thrash).
	Transition bool `json:"transition"`
}

// Node is one object in the ownerReference tree.
type Node struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Summary string `json:"summary"`
	// Deleting is true while the object has a deletionTimestamp.
	Deleting bool   `json:"deleting,omitempty"`
	Note     string `json:"note,omitempty"`
	Children []Node `json:"children,omitempty"`
}

// Event is one Kubernetes Event about the Database or, a Warning, about
// one of its children.
type Event struct {
	// Object names the child it is about ("StatefulSet orders"), "" when
	// it is about the Database itself.
	Object  string    `json:"object,omitempty"`
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Count   int32     `json:"count"`
	Last    time.Time `json:"last"`
}

// Condition is d's condition of type t, if it has one.
func (d Database) Condition(t string) (Condition, bool) {
	for _, c := range d.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return Condition{}, false
}

// Warnings are the Warning Events about the Database's children: what the
// card shows beside its conditions, open, while the Database is not Ready.
func (d Database) Warnings() []Event {
	var out []Event
	for _, e := range d.Events {
		if e.Object != "" {
			out = append(out, e)
		}
	}
	return out
}

// Ready reports the Ready condition's status, "" when there is none.
func (d Database) Ready() string {
	c, _ := d.Condition("Ready")
	return c.Status
}

// Snapshot is the view model of a final snapshot ConfigMap whose Database is
// gone, as sent in "state" messages (kind ConfigMap) and rendered under
// "Snapshots kept after delete". While its Database exists the snapshot is
// shown in that Database's owner tree instead (Database.Unowned). A Database
// deleted without a snapshot is listed there too, as a Lost one: the
// ConfigMap it should have left, never written.
type Snapshot struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Database is the Database the snapshot was taken from, and DatabaseUID
	// its uid as the snapshot records it: a Database of the same name made
	// later is another object.
	Database    string `json:"database"`
	DatabaseUID string `json:"databaseUID,omitempty"`
	// Generation and Time are read from the snapshot's data: the Database's
	// metadata.generation and the moment the finalizer wrote it. Zero when
	// the data does not hold them.
	Generation int64     `json:"generation"`
	Time       time.Time `json:"time"`
	// Note says why it is still here, or, for a lost one, why none was
	// written.
	Note string `json:"note"`
	// Lost is true when no snapshot was written: the Database (its name,
	// DatabaseUID and Generation as last seen) was deleted without one, so
	// its data is gone. Name is then the snapshot it would have had, and
	// Time when the lab saw the Database go.
	Lost bool `json:"lost,omitempty"`
}

// PublishedDatabase is a Database's view model as "state" messages carry
// it: the view model, and its card rendered by the lab's templates (HTML),
// which the page swaps in. HTML is empty when the watcher has no Renderer.
type PublishedDatabase struct {
	Database
	HTML string `json:"html,omitempty"`
}

// PublishedSnapshot is a kept snapshot's view model as "state" messages
// carry it, with its rendered list entry.
type PublishedSnapshot struct {
	Snapshot
	HTML string `json:"html,omitempty"`
}
