package session_test

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/web/session"
)

// BenchmarkSessionFlood is the flood of issue 13 against the real cluster:
// cookie-less GET /lab requests, first from one address, then from many,
// eight at a time, with the table capped at 50 sessions and 20 an address.
// It reports what was created and refused, the lab namespaces left alive,
// how long a learner arriving after the flood waits for their page's
// session, and the process's peak RSS above idle.
//
//	go test -run '^$' -bench BenchmarkSessionFlood -benchtime 1x ./web/session/
func BenchmarkSessionFlood(b *testing.B) {
	c := kubeClient(b)
	debug.SetGCPercent(200) // as oplab runs
	var created atomic.Int64
	m, err := session.New(b.Context(), session.Options{
		Namespaces:  labns.KubeNamespaces{Client: c, MaxDatabases: 5},
		MaxSessions: 50, MaxPerClient: 20, OnExpire: func(string) {},
	})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		idle := rss(b, "VmRSS")
		_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
		var refused, failed atomic.Int64
		flood := func(n int, addr func(i int) string) {
			var wg sync.WaitGroup
			next := atomic.Int64{}
			for range 8 {
				wg.Go(func() {
					for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
						r := httptest.NewRequest("GET", "/lab", nil)
						r.RemoteAddr = addr(i) + ":5000"
						_, err := m.Begin(httptest.NewRecorder(), r)
						switch {
						case errors.Is(err, session.ErrFull):
							refused.Add(1)
						case err != nil:
							failed.Add(1)
						default:
							created.Add(1)
						}
					}
				})
			}
			wg.Wait()
		}
		start := time.Now()
		flood(300, func(int) string { return "198.51.100.7" })
		flood(200, func(i int) string { return "203.0.113." + strconv.Itoa(i%200) })
		floodTime := time.Since(start)
		learner := time.Now()
		w := httptest.NewRecorder()
		if _, err := m.Begin(w, httptest.NewRequest("GET", "/lab", nil)); err != nil {
			b.Fatalf("a learner after the flood: %v", err)
		}
		learnerWait := time.Since(learner)
		live, err := labns.KubeNamespaces{Client: c}.List(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		peak := rss(b, "VmHWM")
		b.ReportMetric(float64(created.Load()), "sessions-started")
		b.ReportMetric(float64(refused.Load()), "refused")
		b.ReportMetric(float64(failed.Load()), "failed")
		b.ReportMetric(float64(len(live)), "lab-namespaces-alive")
		b.ReportMetric(floodTime.Seconds(), "s-flood")
		b.ReportMetric(float64(learnerWait.Milliseconds()), "ms-learner-begin")
		b.ReportMetric(float64(peak-idle)/(1<<20), "peak-above-idle-MiB")
		for _, ns := range live {
			_ = labns.KubeNamespaces{Client: c}.Delete(context.Background(), ns.Name)
		}
	}
}

func rss(b *testing.B, field string) int64 {
	runtime.GC()
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc/self/status: %v", err)
	}
	for line := range bytes.Lines(raw) {
		if rest, ok := bytes.CutPrefix(line, []byte(field+":")); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
