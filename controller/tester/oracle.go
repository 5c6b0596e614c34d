package tester

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/oplab-dev/oplab/controller"
)

// The lesson sections a finding points to.
const (
	lessonLoop        = "/lessons/reconciliation-loop#the-loop"
	lessonLevel       = "/lessons/reconciliation-loop#level-triggered-not-edge-triggered"
	lessonIdempotent  = "/lessons/reconciliation-loop#idempotent-actions"
	lessonErrors      = "/lessons/reconciliation-loop#errors-backoff-and-resync"
	lessonOwners      = "/lessons/status-owners-finalizers#owner-references-and-garbage-collection"
	lessonFinalizers  = "/lessons/status-owners-finalizers#finalizers"
	lessonObserved    = "/lessons/status-owners-finalizers#observedgeneration"
	lessonThrash      = "/lessons/pitfalls-interview#status-thrash"
	lessonNonIdempot  = "/lessons/pitfalls-interview#non-idempotent-reconciles"
	lessonStuckFinals = "/lessons/pitfalls-interview#stuck-finalizers"
)

// reference is what the ordinary life left after a phase: the end state a
// perturbed run of the same phase must reach too.
type reference struct {
	children []string // "Kind name"
	// snapshot: the final snapshot was written (the delete phase).
	snapshot bool
}

// problem is a check the end state failed, in the course's words.
type problem struct {
	message string
	lesson  string
}

// check holds the end state of a phase to the ordinary life's, and to
// what is true of any reconciler of Databases: every child controlled by
// the Database, no child it lacks, none it has twice, the StatefulSet at
// the Database's replicas; once the Database is gone, its children
// collected and its final snapshot, this Database's, written.
func check(st state, ref reference, gone bool, uid types.UID) []problem {
	var out []problem
	have := names(st.children)
	for _, c := range st.children {
		switch {
		case gone && c.ownerUID == uid:
			out = append(out, problem{fmt.Sprintf("%s outlived its Database: the garbage collector has not removed it", c), lessonOwners})
		case gone:
			// Unowned leftovers are reported below, as orphans.
		case c.owner == "":
			out = append(out, problem{fmt.Sprintf("%s has no controller reference to the Database: the garbage collector will never "+
				"delete it, and no Owns watch hears of it", c), lessonOwners})
		case c.ownerUID != uid:
			out = append(out, problem{fmt.Sprintf("%s is controlled by %s with uid %s, not by this Database (uid %s): a Database "+
				"deleted and made again under the same name left it behind", c, c.owner, c.ownerUID, uid), lessonOwners})
		}
	}
	for _, n := range have {
		if !slices.Contains(ref.children, n) {
			what := "appeared where the ordinary life has none"
			if !gone {
				what = "appeared beside the children the ordinary life makes: a create that is not idempotent makes a second one"
			}
			if gone {
				out = append(out, problem{fmt.Sprintf("%s is left behind, an orphan: %s", n, what), lessonOwners})
			} else {
				out = append(out, problem{fmt.Sprintf("%s %s", n, what), lessonNonIdempot})
			}
		}
	}
	for _, n := range ref.children {
		if !slices.Contains(have, n) {
			out = append(out, problem{fmt.Sprintf("%s, which the ordinary life keeps, is missing: a child deleted, or never made, "+
				"must be made again by the next reconcile", n), lessonLevel})
		}
	}
	if st.db != nil && !gone {
		want := st.db.Spec.Replicas
		if want == 0 {
			want = 1
		}
		for _, c := range st.children {
			if c.kind == "StatefulSet" && c.replicas != nil && *c.replicas != want {
				out = append(out, problem{fmt.Sprintf("%s runs %d replicas where the Database asks for %d: the difference is "+
					"never corrected", c, *c.replicas, want), lessonLevel})
			}
		}
	}
	if gone && ref.snapshot {
		switch {
		case st.snapshot == nil:
			out = append(out, problem{fmt.Sprintf("the final snapshot %s was never written: the Database went without its "+
				"finalizer's work", controller.SnapshotName(dbName)), lessonFinalizers})
		case types.UID(st.snapshot.Data["uid"]) != uid:
			out = append(out, problem{fmt.Sprintf("the final snapshot %s holds uid %q, not this Database's %s: it is "+
				"another Database's, and this one's is lost", st.snapshot.Name, st.snapshot.Data["uid"], uid), lessonFinalizers})
		}
	}
	return out
}

// words joins problems for a message.
func words(ps []problem) string {
	var m []string
	for _, p := range ps {
		m = append(m, p.message)
	}
	return strings.Join(m, "; ")
}
