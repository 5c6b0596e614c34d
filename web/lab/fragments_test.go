package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/web/lab/dbview"
)

func shopView() dbview.Database {
	seen := time.Date(2026, 11, 30, 9, 41, 7, 0, time.UTC)
	return dbview.Database{
		Name: "shop", Engine: "postgres", Version: "16", Replicas: 3, Generation: 2, ObservedGeneration: 2, Pitfall: "drop-events",
		Conditions: []dbview.Condition{{Type: "Ready", Status: "True", Reason: "Ready", LastTransitionTime: seen,
			History: []dbview.Change{{Seen: seen, Status: "False"}, {Seen: seen, Status: "True", Transition: true}}}},
	}
}

func TestFragmentIsThePageCard(t *testing.T) {
	html, err := NewFragments().RenderDatabase(shopView())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<article class="db" id="db-shop"`, `class="pill state ok">Ready True<`,
		// Times in UTC, with their instant for the lab (base.js) to show in the learner's zone.
		`<time datetime="2026-11-30T09:41:07Z">09:41:07 UTC</time>`,
		// The forms carry the live values: the edit form follows the object.
		`name="replicas" type="number" min="1" value="3"`, `name="version" value="16"`,
		`<option value="drop-events" selected`,
		// Stable ids, so the browser keeps open what the learner opened.
		`id="db-shop-history-Ready"`, `id="db-shop-drift"`, `id="db-shop-escape"`, `data-part="edit"`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("fragment lacks %q:\n%s", want, html)
		}
	}
	if strings.Contains(html, `name="scenario"`) {
		t.Error("a streamed card names a scenario; it is shared by every viewer of the namespace")
	}
	// The page draws the same card with the same component, plus its scenario.
	p := Page{Namespace: "lab-x", Databases: []dbview.Database{shopView()}, Pitfalls: defaultPitfalls(), ChildKinds: ChildKinds,
		Scenario: &ScenarioView{Name: "finalizer"}}
	var page bytes.Buffer
	if err := LabPage(p).Render(context.Background(), &page); err != nil {
		t.Fatal(err)
	}
	withoutScenario := strings.ReplaceAll(page.String(), `<input type="hidden" name="scenario" value="finalizer">`, "")
	if !strings.Contains(withoutScenario, html) {
		t.Errorf("the page's card differs from the streamed one:\n%s", html)
	}
}

// A replayed state is drawn again by this package's renderer, read-only.
func TestReplayMessageIsReadOnly(t *testing.T) {
	view, _ := json.Marshal(shopView()) // an export without html, as older ones are
	snap, _ := json.Marshal(dbview.Snapshot{Name: "shop-final-snapshot", Database: "shop", Generation: 2})
	now := time.Now()
	msgs := []trace.Message{{State: view}, {State: snap}, {}}
	msgs[0].Seq, msgs[0].Time, msgs[0].Type = 1, now, trace.TypeState
	msgs[0].Object.Kind, msgs[0].Object.Name = "Database", "shop"
	msgs[1].Seq, msgs[1].Time, msgs[1].Type = 2, now, trace.TypeState
	msgs[1].Object.Kind, msgs[1].Object.Name = "ConfigMap", "shop-final-snapshot"
	msgs[2].Seq, msgs[2].Time, msgs[2].Type = 3, now, trace.TypeState // a deletion: no state
	msgs[2].Object.Kind, msgs[2].Object.Name = "Database", "gone"
	encode := func() trace.Export {
		e := trace.Export{Version: trace.ExportVersion, Namespace: "lab-x"}
		for _, m := range msgs {
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			e.Messages = append(e.Messages, b)
		}
		return e
	}
	e := encode()
	decode := func(raw json.RawMessage) trace.Message {
		var m trace.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}

	var out []json.RawMessage
	for _, raw := range e.Messages {
		m, err := ReplayMessage(raw)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	var d dbview.PublishedDatabase
	if err := json.Unmarshal(decode(out[0]).State, &d); err != nil {
		t.Fatal(err)
	}
	if d.Name != "shop" || !strings.Contains(d.HTML, `id="db-shop"`) || strings.Contains(d.HTML, "<form") {
		t.Errorf("replayed card: name %q, html %s; want the card without forms", d.Name, d.HTML)
	}
	var s dbview.PublishedSnapshot
	if err := json.Unmarshal(decode(out[1]).State, &s); err != nil || !strings.Contains(s.HTML, `id="snap-shop-final-snapshot"`) {
		t.Errorf("replayed snapshot: %v %s", err, s.HTML)
	}
	if st := decode(out[2]).State; st != nil {
		t.Errorf("a deletion gained a state: %s", st)
	}

	msgs[0].State = json.RawMessage(`{"replicas": "three"}`)
	if _, err := ReplayMessage(encode().Messages[0]); err == nil || !strings.HasPrefix(err.Error(), " (seq 1): ") {
		t.Errorf("a broken Database state: err = %v; want it to begin with its seq, for the caller to place", err)
	}
}

func TestPageShowsPausedAndKubectl(t *testing.T) {
	render := func(p Page) string {
		var b bytes.Buffer
		if err := LabPage(p).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	running := render(Page{Namespace: "lab-x"})
	if !strings.Contains(running, `id="loop-paused" class="loop-paused" role="status" hidden`) || strings.Contains(running, `id="kubectl-line"`) {
		t.Error("a running namespace shows paused, or a kubectl line it was not given")
	}
	paused := render(Page{Namespace: "lab-x", Paused: true, KubectlLine: "kubectl --kubeconfig k -n lab-x get databases"})
	for _, want := range []string{
		`data-paused="true"`, `id="loop-paused" class="loop-paused" role="status">`,
		`<code id="kubectl-line" class="kubectl-line" aria-labelledby="kubectl-h">kubectl --kubeconfig k -n lab-x get databases</code>`,
		`data-copy="kubectl-line"`,
	} {
		if !strings.Contains(paused, want) {
			t.Errorf("paused page lacks %q", want)
		}
	}
}

func TestCardMarksStatusRewrites(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	d := shopView()
	d.Conditions[0].History = []dbview.Change{
		{Seen: t0, Status: "True", Reason: "Ready", LastTransitionTime: t0, Transition: true},
		{Seen: t0.Add(time.Second), Status: "True", Reason: "Ready", LastTransitionTime: t0.Add(time.Second)},
		{Seen: t0.Add(2 * time.Second), Status: "True", Reason: "Ready", LastTransitionTime: t0.Add(2 * time.Second)},
	}
	html, err := NewFragments().RenderDatabase(d)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(html, "rewritten: lastTransitionTime moved, status did not"); n != 2 {
		t.Errorf("card marks %d rewrites, want 2:\n%s", n, html)
	}
	if !strings.Contains(html, "Ready: 3 values seen") {
		t.Error("the history does not count the rewrites")
	}
}
