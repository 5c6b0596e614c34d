package lab

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
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

	"github.com/oplab-dev/oplab/web/session"
)

// BenchmarkReplayMemory is the replay attack of issue 13: eight clients,
// each with a session of its own, upload a 31 MB export at once over
// loopback, retrying on 503 until each has had its page, while the
// process's peak RSS is watched (VmHWM, reset first). It reports the peak above idle and how often clients were told to
// come back. The clients' bodies are generated as they are sent and their
// pages read and discarded, so what the figure counts is the server's.
//
//	go test -run '^$' -bench BenchmarkReplayMemory -benchtime 1x ./web/lab/
func BenchmarkReplayMemory(b *testing.B) {
	const clients, size = 8, 31 << 20
	debug.SetGCPercent(200) // as oplab runs (cluster.TuneGC)
	sessions, err := session.New(b.Context(), session.Options{Namespaces: noNamespaces{}})
	if err != nil {
		b.Fatal(err)
	}
	mux := http.NewServeMux()
	New(Options{
		Store: &recordingStore{}, States: fixedStates(nil), Sessions: sessions,
		Controller: &fakeController{running: true}, Exporter: fakeExporter{},
	}).Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for b.Loop() {
		idle := settledRSS(b)
		resetPeakRSS(b)
		var busy, ok atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for i := range clients {
			cookie := benchSession(b, srv.URL)
			wg.Go(func() {
				for try := 0; try < 600; try++ {
					code, err := postExport(srv.URL, cookie, fmt.Sprintf("big-%d.json", i), size)
					if err != nil {
						b.Error(err)
						return
					}
					if code == http.StatusOK {
						ok.Add(1)
						return
					}
					if code != http.StatusServiceUnavailable {
						b.Errorf("client %d: status %d", i, code)
						return
					}
					busy.Add(1)
					time.Sleep(100 * time.Millisecond)
				}
			})
		}
		wg.Wait()
		peak := procStatus(b, "VmHWM")
		b.ReportMetric(float64(idle)/(1<<20), "idle-MiB")
		b.ReportMetric(float64(peak-idle)/(1<<20), "peak-above-idle-MiB")
		b.ReportMetric(float64(ok.Load()), "replayed")
		b.ReportMetric(float64(busy.Load()), "told-503")
		b.ReportMetric(time.Since(start).Seconds(), "s-all-replayed")
		after := settledRSS(b)
		b.ReportMetric(float64(after-idle)/(1<<20), "after-above-idle-MiB")
	}
}

// benchSession opens the lab at url as a new browser and returns its
// session cookie.
func benchSession(b *testing.B, url string) *http.Cookie {
	resp, err := http.Get(url + "/lab")
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == session.CookieName {
			return c
		}
	}
	b.Fatalf("GET /lab = %d set no session cookie", resp.StatusCode)
	return nil
}

// postExport uploads a generated export of about size bytes with the
// session cookie, and reads the page it gets back.
func postExport(url string, cookie *http.Cookie, name string, size int) (int, error) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		fw, err := mw.CreateFormFile("file", name)
		if err == nil {
			err = writeExport(fw, size)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequest("POST", url+"/lab/replay", pr)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.AddCookie(cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if resp.StatusCode == http.StatusOK && n < int64(size) {
		return 0, fmt.Errorf("page of %d bytes for a %d-byte export", n, size)
	}
	return resp.StatusCode, err
}

// writeExport writes an export of about size bytes, shaped like a real one:
// steps, and state snapshots of a few KiB.
func writeExport(w io.Writer, size int) error {
	bw := bufio.NewWriter(w)
	state := `{"name":"orders","conditions":[` + strings.Repeat(`{"type":"Ready","status":"True","reason":"AllReplicasReady","message":"3 of 3 replicas ready"},`, 30) + `{"type":"Progressing","status":"False"}]}`
	fmt.Fprint(bw, `{"version":1,"exportedAt":"2026-01-01T00:00:00Z","namespace":"lab-a","messages":[`)
	n := 0
	for seq := 1; n < size; seq++ {
		var m string
		if seq%4 == 0 {
			m = `{"seq":` + strconv.Itoa(seq) + `,"time":"2026-01-01T00:00:00Z","type":"state","object":{"kind":"Database","namespace":"lab-a","name":"orders"},"state":` + state + `}`
		} else {
			m = `{"seq":` + strconv.Itoa(seq) + `,"time":"2026-01-01T00:00:00Z","type":"action","object":{"kind":"Database","namespace":"lab-a","name":"orders"},"action":"create","target":{"kind":"StatefulSet","namespace":"lab-a","name":"orders"},"outcome":"Created","durationNs":2100000}`
		}
		if seq > 1 {
			bw.WriteByte(',')
		}
		k, err := bw.WriteString(m)
		if err != nil {
			return err
		}
		n += k + 1
	}
	bw.WriteString("]}")
	return bw.Flush()
}

// settledRSS is the process's RSS after a collection has returned what it
// can to the OS.
func settledRSS(b *testing.B) int64 {
	runtime.GC()
	debug.FreeOSMemory()
	return procStatus(b, "VmRSS")
}

// resetPeakRSS makes VmHWM start again from the current RSS.
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak RSS: %v", err)
	}
}

// procStatus reads a size field (kB) of /proc/self/status, in bytes.
func procStatus(b *testing.B, field string) int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc/self/status: %v", err)
	}
	for line := range bytes.Lines(raw) {
		if rest, ok := bytes.CutPrefix(line, []byte(field+":")); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}
