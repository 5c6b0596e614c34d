package controller

import (
	"testing"
)

func TestRunnerStartStop(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := NewRunner(e.cfg, e.testOptions())
	if r.Running() {
		t.Fatal("a new Runner says it is running")
	}
	if err := r.Stop(); err != nil {
		t.Fatalf("Stop of a stopped Runner: %v", err)
	}
	for round := range 2 {
		if err := r.Start(e.ctx); err != nil {
			t.Fatalf("round %d: Start: %v", round, err)
		}
		if !r.Running() {
			t.Fatalf("round %d: not running after Start", round)
		}
		if err := r.Start(e.ctx); err == nil {
			t.Fatalf("round %d: a second Start succeeded", round)
		}
		if err := r.Stop(); err != nil {
			t.Fatalf("round %d: Stop: %v", round, err)
		}
		if r.Running() {
			t.Fatalf("round %d: running after Stop", round)
		}
	}
	var phases []string
	for _, s := range e.sink.all() {
		if s.Type == StepController {
			phases = append(phases, s.Phase)
		}
	}
	if want := []string{"started", "stopped", "started", "stopped"}; len(phases) != 4 || phases[0] != want[0] || phases[3] != want[3] {
		t.Errorf("controller steps = %v, want %v", phases, want)
	}

	// A restarted controller reconciles: the fresh manager really works.
	e.startController(e.testOptions())
	e.mustCreate(newDB("after-restart", 1, ""))
	e.expectReady("after-restart")
}
