package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/web/stream"
)

// BenchmarkLearnerTimeline4096 is what oplab keeps of one learner's
// namespace once its timeline holds 4,096 messages, made by the real
// controller and the lab's watcher on the embedded cluster: a learner
// creating Databases, scaling them, deleting a StatefulSet and the
// Databases, over and over. It prints the ring's bytes (the steps, the
// states kept), the object history's, and the state messages as a viewer
// connected throughout received them (every card rendered), which the
// ring once kept whole; figures, not assertions.
//
//	CI=true go test -run '^$' -bench LearnerTimeline4096 -benchtime 1x ./web/
func BenchmarkLearnerTimeline4096(b *testing.B) {
	e := needEnv(b)
	for b.Loop() {
		c, ns := e.learner(b)
		sent := &stateBytes{}
		stop := sent.watch(b, e, c)
		ctx := context.Background()
		rounds := 0
		began := time.Now()
		for e.recorder.Size(ns).Messages < stream.DefaultRingSize && time.Since(began) < 10*time.Minute {
			learnerRound(b, e, ctx, ns, rounds)
			rounds++
		}
		stop()
		sz := e.recorder.Size(ns)
		mib := func(n int) float64 { return float64(n) / (1 << 20) }
		b.ReportMetric(mib(sz.Bytes), "ring-MiB")
		b.ReportMetric(mib(sz.StateBytes), "states-kept-MiB")
		b.ReportMetric(mib(sent.bytes()), "states-sent-MiB")
		b.ReportMetric(mib(sz.HistoryBytes), "history-MiB")
		b.ReportMetric(mib(sz.Bytes+sz.HistoryBytes), "total-MiB")
		b.Logf("%d rounds in %s: ring %d messages, %.2f MiB, of which %d states (%d older) %.2f MiB; the same states as sent %.2f MiB; object history %.2f MiB; ring and history %.2f MiB",
			rounds, time.Since(began).Round(time.Second), sz.Messages, mib(sz.Bytes), sz.States, sz.OlderStates, mib(sz.StateBytes), mib(sent.bytes()), mib(sz.HistoryBytes), mib(sz.Bytes+sz.HistoryBytes))
	}
}

// learnerRound is what a learner does in one go: make a Database, scale
// it up, delete its StatefulSet (drift), scale it down, delete it.
func learnerRound(b *testing.B, e *testEnv, ctx context.Context, ns string, round int) {
	b.Helper()
	name := fmt.Sprintf("db%d", round%3)
	key := client.ObjectKey{Namespace: ns, Name: name}
	ready := func(replicas int32) {
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			var db v1alpha1.Database
			if e.client.Get(ctx, key, &db) == nil && db.Status.ReadyReplicas == replicas && db.Status.ObservedGeneration == db.Generation {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		b.Fatalf("%s: not %d ready within a minute", name, replicas)
	}
	scale := func(replicas int32) {
		var db v1alpha1.Database
		if err := e.client.Get(ctx, key, &db); err != nil {
			b.Fatal(err)
		}
		db.Spec.Replicas = replicas
		if err := e.client.Update(ctx, &db); err != nil {
			b.Fatal(err)
		}
		ready(replicas)
	}
	db := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.DatabaseSpec{Engine: "postgres", Replicas: 1}}
	if err := e.client.Create(ctx, db); err != nil {
		b.Fatal(err)
	}
	ready(1)
	scale(3)
	if err := e.client.Delete(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
		b.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	ready(3)
	scale(1)
	if err := e.client.Delete(ctx, db); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if err := e.client.Get(ctx, key, &v1alpha1.Database{}); err != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatalf("%s: still there a minute after its delete", name)
}

// stateBytes sums the state messages a viewer of the namespace receives.
type stateBytes struct {
	mu sync.Mutex
	n  int
}

func (s *stateBytes) bytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *stateBytes) watch(b *testing.B, e *testEnv, c *http.Client) (stop func()) {
	u, _ := url.Parse(e.http.URL)
	hdr := http.Header{"Origin": {e.http.URL}}
	for _, ck := range c.Jar.Cookies(u) {
		hdr.Add("Cookie", ck.String())
	}
	conn, _, err := websocket.DefaultDialer.Dial("ws://"+u.Host+"/ws", hdr)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_, data, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var msgs []json.RawMessage
			if json.Unmarshal(data, &msgs) != nil {
				continue
			}
			for _, m := range msgs {
				var head struct {
					Type   string          `json:"type"`
					Object json.RawMessage `json:"object"`
				}
				if json.Unmarshal(m, &head) == nil && head.Type == string(stream.TypeState) {
					s.mu.Lock()
					s.n += len(m)
					s.mu.Unlock()
				}
			}
		}
	}()
	return func() { conn.Close(); <-done }
}
