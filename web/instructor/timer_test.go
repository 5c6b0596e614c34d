package instructor

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/web/classroom"
)

// discard drops what the classroom publishes: these tests read the timer
// back from the Classroom.
type discard struct{}

func (discard) PublishState(controller.ObjectRef, json.RawMessage) {}

func TestTimerRoutesStartClearAndRefuse(t *testing.T) {
	c := classroom.New(discard{}, classroom.Options{})
	t.Cleanup(c.Close)
	mux := http.NewServeMux()
	New(context.Background(), Options{Token: token, Controller: &fakeSwitch{running: true}, Timer: c}).Register(mux)
	cookie := do(mux, "GET", "/instructor?token="+token, nil, nil).Result().Cookies()[0]

	for _, target := range []string{"/instructor/timer", "/instructor/timer/clear"} {
		if w := do(mux, "POST", target, url.Values{"minutes": {"10"}}, nil); w.Code != http.StatusUnauthorized {
			t.Errorf("POST %s without the instructor cookie = %d, want 401", target, w.Code)
		}
	}
	for _, bad := range []struct{ minutes, label, say string }{
		{"ten", "", "not a number"},
		{"NaN", "", "not a number"},
		{"1e300", "", "out of range"},
		{"0.1", "", "duration"},
		{"5", strings.Repeat("x", classroom.MaxTimerLabel+1), "label"},
	} {
		w := do(mux, "POST", "/instructor/timer", url.Values{"minutes": {bad.minutes}, "label": {bad.label}}, cookie)
		if w.Code < 400 || !strings.Contains(w.Body.String(), bad.say) {
			t.Errorf("minutes %q label %d chars: %d %q, want a refusal naming %q", bad.minutes, len(bad.label), w.Code, w.Body.String(), bad.say)
		}
	}
	if _, ok := c.Timer(); ok {
		t.Fatal("a refused timer was set")
	}
	before := time.Now()
	if w := do(mux, "POST", "/instructor/timer", url.Values{"minutes": {"2.5"}, "label": {"Pair up"}}, cookie); w.Code != http.StatusSeeOther {
		t.Fatalf("start = %d %s", w.Code, w.Body.String())
	}
	tm, ok := c.Timer()
	if !ok || tm.Label != "Pair up" || tm.Seconds != 150 || tm.EndsAt().Before(before.Add(150*time.Second-time.Second)) {
		t.Errorf("timer %+v (%v), want Pair up for 150 s", tm, ok)
	}
	page := do(mux, "GET", "/instructor", nil, cookie).Body.String()
	if !strings.Contains(page, `id="instructor-timer"`) || !strings.Contains(page, "Pair up") || !strings.Contains(page, "UTC") {
		t.Errorf("the instructor page does not show the running timer")
	}
	if w := do(mux, "POST", "/instructor/timer/clear", nil, cookie); w.Code != http.StatusSeeOther {
		t.Fatalf("clear = %d", w.Code)
	}
	if _, ok := c.Timer(); ok {
		t.Error("the timer is still set after clear")
	}
}
