package cluster

import (
	"runtime/debug"
	"testing"
)

func TestTuneGCRespectsGOGC(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })

	t.Setenv("GOGC", "")
	if !TuneGC() {
		t.Fatal("TuneGC without GOGC set did nothing")
	}
	if got := debug.SetGCPercent(100); got != GCPercent {
		t.Errorf("GC percent after TuneGC = %d, want %d", got, GCPercent)
	}

	t.Setenv("GOGC", "50")
	debug.SetGCPercent(50)
	if TuneGC() {
		t.Error("TuneGC overrode GOGC=50")
	}
	if got := debug.SetGCPercent(50); got != 50 {
		t.Errorf("GC percent with GOGC=50 = %d, want 50", got)
	}
}
