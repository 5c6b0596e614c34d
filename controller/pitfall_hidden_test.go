package controller

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/internal/polltest"
)

func TestPitfallShown(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        string
	}{
		{"none", nil, ""},
		{"visible", map[string]string{PitfallAnnotation: PitfallStatusThrash}, PitfallStatusThrash},
		{"hidden", map[string]string{PitfallAnnotation: PitfallStatusThrash, PitfallHiddenAnnotation: "true"}, PitfallHidden},
		// A healthy Database among hidden ones looks the same: whether a
		// pitfall is on is hidden too.
		{"hidden without a pitfall", map[string]string{PitfallHiddenAnnotation: "true"}, PitfallHidden},
		{"not hidden by another value", map[string]string{PitfallAnnotation: PitfallDropEvents, PitfallHiddenAnnotation: "yes"}, PitfallDropEvents},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Annotations: tt.annotations}}
			if got := PitfallShown(db); got != tt.want {
				t.Errorf("PitfallShown = %q, want %q", got, tt.want)
			}
			if got, want := PitfallOf(db), tt.annotations[PitfallAnnotation]; got != want {
				t.Errorf("PitfallOf = %q, want %q: hiding must not change the pitfall run", got, want)
			}
		})
	}
}

// hide marks db's pitfall hidden, as the status-storm challenge does.
func hide(db *dbv1.Database) *dbv1.Database {
	if db.Annotations == nil {
		db.Annotations = map[string]string{}
	}
	db.Annotations[PitfallHiddenAnnotation] = "true"
	return db
}

// expectUnnamed fails when any step names pitfall, in its pitfall field or
// in its words, or speaks of a pitfall at all.
func expectUnnamed(t *testing.T, steps []Step, pitfall string) {
	t.Helper()
	for _, s := range steps {
		if s.Pitfall != "" && s.Pitfall != PitfallHidden {
			t.Errorf("%s step says pitfall %q, want %q or none", s.Type, s.Pitfall, PitfallHidden)
		}
		if strings.Contains(s.Message+s.Error, pitfall) {
			t.Errorf("%s step names the hidden pitfall: %q", s.Type, s.Message+s.Error)
		}
		// Hidden means whether one is on, too: no words about a pitfall.
		if strings.Contains(strings.ToLower(s.Message+s.Error), "pitfall") {
			t.Errorf("%s step speaks of a pitfall: %q", s.Type, s.Message+s.Error)
		}
	}
}

func TestPitfallHiddenStatusThrashSaysHiddenAndStillThrashes(t *testing.T) {
	t.Parallel() // its own namespace and controller (newEnv); it mostly waits on resyncs and Pods
	e := newEnv(t)
	e.startController(e.testOptions())
	e.mustCreate(hide(newDB("secret", 1, PitfallStatusThrash)))
	e.expectReady("secret")

	// The storm is still there, told by what it writes: a condition whose
	// lastTransitionTime moved without its status flipping.
	var rewrites int
	polltest.Until(e.t, deadline, "three timestamp-only status rewrites", func() (bool, error) {
		rewrites = countSteps(e.sink.forDatabase("secret"), func(s Step) bool {
			return s.Type == StepStatus && !s.Skipped && slices.ContainsFunc(s.Conditions, func(c ConditionChange) bool {
				return !c.Transition && c.FromLastTransitionTime != "" && c.LastTransitionTime != c.FromLastTransitionTime
			})
		})
		return rewrites >= 3, nil
	})
	steps := e.sink.forDatabase("secret")
	expectUnnamed(t, steps, PitfallStatusThrash)
	if n := countSteps(steps, func(s Step) bool { return s.Type == StepFetch && s.Pitfall == PitfallHidden }); n == 0 {
		t.Errorf("no fetch says the pitfall is %q:\n%s", PitfallHidden, describe(steps))
	}
	if n := countSteps(steps, func(s Step) bool { return s.Type == StepStatus && !s.Skipped && s.Pitfall == PitfallHidden }); n < rewrites {
		t.Errorf("%d of %d status writes say the pitfall is %q", n, rewrites, PitfallHidden)
	}
}

func TestPitfallHiddenDropEventsIgnoresUnnamed(t *testing.T) {
	t.Parallel() // its own namespace and controller (newEnv); it mostly waits on resyncs and Pods
	e := newEnv(t)
	e.startController(e.testOptions())
	e.mustCreate(hide(newDB("muffled", 1, PitfallDropEvents)))
	e.expectReady("muffled")

	e.deleteServiceAndWaitForIt("muffled")

	steps := e.sink.forDatabase("muffled")
	expectUnnamed(t, steps, PitfallDropEvents)
	ignored := countSteps(steps, func(s Step) bool {
		return s.Type == StepEvent && s.Ignored && s.Pitfall == PitfallHidden && strings.HasPrefix(s.Message, "ignored; the resync")
	})
	if ignored == 0 {
		t.Errorf("no ignored event, unexplained, with the pitfall %q:\n%s", PitfallHidden, describe(steps))
	}
	if n := countSteps(steps, func(s Step) bool { return s.Type == StepEvent && !s.Ignored }); n > 0 {
		t.Errorf("%d events were not ignored: hiding the pitfall must not switch it off", n)
	}
}
