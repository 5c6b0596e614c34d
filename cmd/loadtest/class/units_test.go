package class

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/trace"
)

// TestParseStat checks the fields read from /proc/PID/stat, with a command
// name holding spaces and a parenthesis, and refuses a line cut short.
func TestParseStat(t *testing.T) {
	line := "4242 (kube apiserver) (x)) S 17 4242 4242 0 -1 4194560 12345 0 0 0 250 75 0 0 20 0 12 0 100 0 0"
	st, ok := parseStat(line)
	if !ok {
		t.Fatalf("parseStat(%q) failed", line)
	}
	if st.name != "kube apiserver) (x)" || st.ppid != 17 || st.cpu != 3250*time.Millisecond {
		t.Errorf("parseStat = %+v; want name %q, ppid 17, cpu 3.25s", st, "kube apiserver) (x)")
	}
	if _, ok := parseStat("4242 (etcd) S 17 4242"); ok {
		t.Error("parseStat accepted a line without utime and stime")
	}
}

// TestDatabaseEvent checks what a learner reads off its stream: Ready from
// a Database's state view, gone from its state removed, and nothing from
// other kinds or a view not Ready.
func TestDatabaseEvent(t *testing.T) {
	db := controller.ObjectRef{Kind: "Database", Namespace: "lab-x", Name: "shop"}
	view := func(status string) json.RawMessage {
		return json.RawMessage(`{"name":"shop","conditions":[{"type":"Progressing","status":"True"},{"type":"Ready","status":"` + status + `"}]}`)
	}
	for _, c := range []struct {
		name string
		msg  string
		want dbEvent
		ok   bool
	}{
		{"ready", mustJSON(t, trace.Message{Step: controller.Step{Type: trace.TypeState, Object: db}, State: view("True")}), dbEvent{name: "shop", ready: true}, true},
		{"not ready", mustJSON(t, trace.Message{Step: controller.Step{Type: trace.TypeState, Object: db}, State: view("False")}), dbEvent{}, false},
		{"gone", mustJSON(t, trace.Message{Step: controller.Step{Type: trace.TypeState, Object: db}}), dbEvent{name: "shop", gone: true}, true},
		{"a snapshot", mustJSON(t, trace.Message{Step: controller.Step{Type: trace.TypeState, Object: controller.ObjectRef{Kind: "ConfigMap", Name: "shop"}}}), dbEvent{}, false},
		{"a step", mustJSON(t, trace.Message{Step: controller.Step{Type: controller.StepStatus, Object: db}}), dbEvent{}, false},
	} {
		var m trace.Message
		if err := json.Unmarshal([]byte(c.msg), &m); err != nil {
			t.Fatal(err)
		}
		got, ok := databaseEvent(m)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: databaseEvent(%s) = %+v, %t; want %+v, %t", c.name, c.msg, got, ok, c.want, c.ok)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCapacityOf checks the arithmetic on round numbers: oplab idles at
// 0.1 cores; quiet, the class of 10 learners costs 0.11; 10 learners doing
// 50 cycles in a minute, with the instructor's 10, cost 12 CPU s.
func TestCapacityOf(t *testing.T) {
	c := capacityOf(cpuWindows{
		idleCPU: time.Second, idle: 10 * time.Second,
		quietCPU: 550 * time.Millisecond, quiet: 5 * time.Second,
		activeCPU: 12 * time.Second, active: time.Minute,
	}, 10, 50, 60, 1)
	near := func(what string, got, want float64) {
		if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("%s = %v; want %v", what, got, want)
		}
	}
	near("base", c.base, 0.1)
	near("rate", c.rate, 5)                 // 50 cycles / 10 learners / 1 min
	near("allCores", c.allCores, 0.02)      // 0.2 cores / 10
	near("rawCores", c.rawCores, 0.01)      // (0.2 - 0.1) cores / 10
	near("quietCores", c.quietCores, 0.001) // (0.11 - 0.1) cores / 10
	near("perCycle", c.perCycle.Seconds(), (12-0.11*60)/60.0)
	near("realCores", c.realCores, 0.001+0.09/60)
	near("rawPerCore", c.rawPerCore, 90) // 0.9 cores left / 0.01
	near("perCore", c.perCore, 0.9/(0.001+0.09/60))
}

// TestSummarise checks the quantiles read from sorted samples.
func TestSummarise(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	s := summarise(ds)
	if s.N != 100 || s.P50 != 51*time.Millisecond || s.P99 != 100*time.Millisecond || s.Max != 100*time.Millisecond {
		t.Errorf("summarise(1..100 ms) = %+v; want n 100, p50 51ms, p99 100ms, max 100ms", s)
	}
	var r durations
	raw, _ := json.Marshal(s)
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if r.P50 != s.P50 || r.P99 != s.P99 || r.Max != s.Max {
		t.Errorf("after JSON: %+v; want %+v", r, s)
	}
}

// TestDescendants checks that the control plane is found below this
// process however deep, without the class's process and what it started.
func TestDescendants(t *testing.T) {
	procs := map[int]stat{
		10: {ppid: 1},  // this process
		11: {ppid: 10}, // kube-apiserver
		12: {ppid: 10}, // sh
		13: {ppid: 12}, // etcd, through the shell
		20: {ppid: 10}, // the class
		21: {ppid: 20}, // the class's own child
		30: {ppid: 1},  // another tenant
	}
	if got, want := descendants(procs, 10, 20), []int{11, 12, 13}; !slices.Equal(got, want) {
		t.Errorf("descendants(10, skip 20) = %v; want %v", got, want)
	}
}

// TestOverQuota checks that only the quota's refusal is tried again.
func TestOverQuota(t *testing.T) {
	quota := &refusal{path: "/lab/databases", status: "403 Forbidden", body: `{"ok":false,"message":"databases.db.oplab.dev \"db-5\" is forbidden: exceeded quota: databases"}`}
	if !overQuota(fmt.Errorf("create: %w", quota)) {
		t.Errorf("overQuota(%v) = false; want true", quota)
	}
	for _, err := range []error{nil, errors.New("exceeded quota"), &refusal{path: "/lab/databases", status: "422 Unprocessable Entity", body: `{"message":"name: must be a DNS label"}`}} {
		if overQuota(err) {
			t.Errorf("overQuota(%v) = true; want false", err)
		}
	}
}
