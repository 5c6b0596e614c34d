package lab

import (
	"fmt"
	"io"
	"testing"

	"github.com/oplab-dev/oplab/web/lab/dbview"
)

// BenchmarkLabPage measures rendering /lab with a full namespace (the cap of
// five Databases), and reports the page size.
func BenchmarkLabPage(b *testing.B) {
	p := Page{Namespace: "lab-bench", Engines: Engines, ChildKinds: ChildKinds, MaxDatabases: 5,
		Form: CreateForm{Name: "orders", Replicas: "1"}}
	for _, s := range Scenarios {
		p.Scenarios = append(p.Scenarios, *s.view(false))
	}
	for i := range 5 {
		p.Databases = append(p.Databases, dbview.Database{
			Name: fmt.Sprint("db-", i), Replicas: 3, Generation: 2, ObservedGeneration: 2,
			Conditions: []dbview.Condition{{Type: "Ready", Status: "True", History: make([]dbview.Change, 10)}},
			Owned:      []dbview.Node{{Kind: "StatefulSet", Name: "x", Children: make([]dbview.Node, 3)}, {Kind: "Service"}, {Kind: "Secret"}},
			Events:     make([]dbview.Event, 20),
		})
	}
	cw := &countingWriter{}
	b.ReportAllocs()
	for b.Loop() {
		cw.n = 0
		if err := LabPage(p).Render(b.Context(), cw); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cw.n), "page-bytes")
}

type countingWriter struct{ n int }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

var _ io.Writer = (*countingWriter)(nil)

// BenchmarkCardFragment measures what the state watcher adds to each
// published change of a Database: rendering its card, and the bytes the
// card adds to the state message.
func BenchmarkCardFragment(b *testing.B) {
	d := dbview.Database{
		Name: "shop", Replicas: 3, Generation: 2, ObservedGeneration: 2,
		Conditions: []dbview.Condition{{Type: "Ready", Status: "True", History: make([]dbview.Change, 10)}, {Type: "Progressing"}, {Type: "Degraded"}},
		Owned:      []dbview.Node{{Kind: "StatefulSet", Name: "x", Children: make([]dbview.Node, 3)}, {Kind: "Service"}, {Kind: "Secret"}},
		Events:     make([]dbview.Event, 20),
	}
	f := NewFragments()
	var n int
	b.ReportAllocs()
	for b.Loop() {
		html, err := f.RenderDatabase(d)
		if err != nil {
			b.Fatal(err)
		}
		n = len(html)
	}
	b.ReportMetric(float64(n), "html-bytes")
}
