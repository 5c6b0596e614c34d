package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/trace"
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
//	CI=true go test -run '^$' -bench LearnerTimeline4096 -benchtime 1x ./web/e2e/
func BenchmarkLearnerTimeline4096(b *testing.B) {
	e := needEnv(b)
	for b.Loop() {
		c, ns := e.learner(b)
		sent := &stateBytes{}
		stop := sent.watch(b, e, c)
		ctx := context.Background()
		rounds := 0
		began := time.Now()
		for e.recorder.Size(ns).Messages < trace.DefaultRingSize && time.Since(began) < 10*time.Minute {
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
		// The controller may write the Database between the read and the update.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var db v1alpha1.Database
			if err := e.client.Get(ctx, key, &db); err != nil {
				return err
			}
			db.Spec.Replicas = replicas
			return e.client.Update(ctx, &db)
		}); err != nil {
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
				if json.Unmarshal(m, &head) == nil && head.Type == string(trace.TypeState) {
					s.mu.Lock()
					s.n += len(m)
					s.mu.Unlock()
				}
			}
		}
	}()
	return func() { conn.Close(); <-done }
}

// BenchmarkLabLoadWithAFullRing is the issue's "lab load with a full ring:
// first paint of the past": a learner's namespace filled as above until its
// timeline holds 4,096 messages, then the learner's lab page loaded again
// and again in Chromium. Each load reports, from the navigation's start,
// when the first row of the past was in the page and painted (the next
// animation frame after it), and when the caption said "caught up" (the
// whole past drawn; it says so 400 ms after the last message of the past,
// which is in the figure). Figures, not assertions.
func BenchmarkLabLoadWithAFullRing(b *testing.B) {
	e := needEnv(b)
	ctx := browser.Tab(b)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(shared.http.URL+"/lab"), chromedp.WaitReady(chromedp.CSS("#create-form"))); err != nil {
		b.Fatal(err)
	}
	ns, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("lab").dataset.namespace`))
	if err != nil || ns == "" {
		b.Fatalf("no namespace on the page: %v", err)
	}
	began := time.Now()
	rounds := 0
	for e.recorder.Size(ns).Messages < trace.DefaultRingSize && time.Since(began) < 10*time.Minute {
		learnerRound(b, e, context.Background(), ns, rounds)
		rounds++
	}
	b.Logf("the ring holds %d messages after %d rounds (%s)", e.recorder.Size(ns).Messages, rounds, time.Since(began).Round(time.Second))
	// Set before the page's own scripts run, at every load.
	const watch = `
window.__firstRow = 0; window.__firstPaint = 0;
new MutationObserver((_, o) => {
  if (!document.querySelector("#rows > li.row")) return;
  o.disconnect();
  window.__firstRow = performance.now();
  requestAnimationFrame(() => setTimeout(() => { window.__firstPaint = performance.now(); }));
}).observe(document, {subtree: true, childList: true});`
	if err := chromedp.Do(ctx, cdpCall(page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: watch})); err != nil {
		b.Fatal(err)
	}
	type load struct{ row, paint, caught float64 }
	var loads []load
	for b.Loop() {
		if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
			b.Fatal(err)
		}
		var l load
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
			got, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`[window.__firstRow || 0, window.__firstPaint || 0,
				/^caught up/.test(document.getElementById("loop-caption")?.textContent || "") ? performance.now() : 0]`))
			if err != nil || len(got) != 3 {
				return false, nil // the page is between documents
			}
			l = load{got[0], got[1], got[2]}
			return l.paint > 0 && l.caught > 0, nil
		})
		if err != nil {
			b.Fatalf("the past was not drawn: %v", err)
		}
		loads = append(loads, l)
	}
	ms := func(f func(load) float64) (p50, worst float64) {
		v := make([]float64, len(loads))
		for i, l := range loads {
			v[i] = f(l)
		}
		slices.Sort(v)
		return v[len(v)/2], v[len(v)-1]
	}
	rowP50, rowMax := ms(func(l load) float64 { return l.row })
	paintP50, paintMax := ms(func(l load) float64 { return l.paint })
	caughtP50, caughtMax := ms(func(l load) float64 { return l.caught })
	b.ReportMetric(paintP50, "first-paint-ms")
	b.ReportMetric(caughtP50, "caught-up-ms")
	b.Logf("%d loads of a lab whose ring holds %d messages: first row in the page p50 %.0f ms (worst %.0f), painted p50 %.0f ms (worst %.0f); whole past drawn and 'caught up' p50 %.0f ms (worst %.0f)",
		len(loads), e.recorder.Size(ns).Messages, rowP50, rowMax, paintP50, paintMax, caughtP50, caughtMax)
}
