package lab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// exportJSON is a small valid export of namespace lab-a with n messages, the
// last of which carries extra as its message text.
func exportJSON(n int, extra string) string {
	var b strings.Builder
	b.WriteString(`{"version":1,"exportedAt":"2026-01-01T00:00:00Z","namespace":"lab-a","messages":[`)
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		msg := ""
		if i == n {
			msg = extra
		}
		// An empty message is left out, as the recorder leaves it out.
		text := ""
		if msg != "" {
			m, _ := json.Marshal(msg)
			text = `,"message":` + string(m)
		}
		fmt.Fprintf(&b, `{"seq":%d,"time":"2026-01-01T00:00:00Z","type":"event","object":{"kind":"Database","namespace":"lab-a","name":"a"}%s}`, i, text)
	}
	b.WriteString(`]}`)
	return b.String()
}

// replayError returns the error the replay page shows, unescaped.
func replayError(page string) string {
	_, after, _ := strings.Cut(page, `role="alert">`)
	msg, _, _ := strings.Cut(after, "</p>")
	return html.UnescapeString(msg)
}

// replayData returns the JSON the replay page hands its player.
func replayData(t *testing.T, page string) string {
	t.Helper()
	_, after, ok := strings.Cut(page, `<script id="replay-data" type="application/json">`)
	data, _, ok2 := strings.Cut(after, "</script>")
	if !ok || !ok2 {
		t.Fatalf("no replay-data script in the page")
	}
	return data
}

func TestReplayChecksTheFileAsItReadsIt(t *testing.T) {
	h := newHarness(t)
	huge := strings.Repeat("x", maxMessageBytes+1)
	tests := []struct {
		name, body string
		code       int
		want       string
	}{
		{"trailing garbage", exportJSON(2, "") + `garbage`, 422, "unexpected data after the timeline's JSON"},
		{"a second document", exportJSON(2, "") + "\n" + exportJSON(1, ""), 422, "unexpected data after the timeline's JSON"},
		{"trailing whitespace is fine", exportJSON(2, "") + "\n\n", 200, ""},
		{"one message too large", exportJSON(2, huge), 422, "messages[1]: a single value is larger than 1024 KiB"},
		{"one message far too large", exportJSON(2, huge+huge+huge), 422, "messages[1]: a single value is larger than 1024 KiB"},
		{"an unknown key", `{"version":1,"junk":"` + huge + `","messages":[]}`, 422, "junk: unknown field"},
		{"a key in another case", `{"version":1,"Namespace":"lab-a","messages":[]}`, 422, `key "Namespace": write it "namespace"`},
		{"Kind beside kind", `{"version":1,"namespace":"lab-a","messages":[{"seq":1,"time":"2026-01-01T00:00:00Z","type":"state","object":{"kind":"Database","namespace":"lab-a","name":"a","Kind":"Nope"},"state":{}}]}`, 422, `messages[0]: object.Kind: unknown field (the field is "kind"`},
		{"Type beside type", `{"version":1,"namespace":"lab-a","messages":[{"seq":1,"time":"2026-01-01T00:00:00Z","type":"state","Type":"event","object":{"kind":"Database","namespace":"lab-a","name":"a"}}]}`, 422, `messages[0]: Type: unknown field (the field is "type"`},
		{"a state with HTML for a kind oplab draws none of", `{"version":1,"namespace":"lab-a","messages":[{"seq":1,"time":"2026-01-01T00:00:00Z","type":"state","object":{"kind":"Secret","namespace":"lab-a","name":"a"},"state":{"html":"<img src=x>"}}]}`, 422, `messages[0] (seq 1): state: oplab draws no state of an object of kind "Secret"`},
		{"a key twice inside a state", `{"version":1,"namespace":"lab-a","messages":[{"seq":1,"time":"2026-01-01T00:00:00Z","type":"state","object":{"kind":"Database","namespace":"lab-a","name":"a"},"state":{"name":"a","name":"b"}}]}`, 422, `messages[0]: state.name: appears twice`},
		{"messages twice", `{"version":1,"messages":[],"messages":[]}`, 422, "messages: appears twice"},
		{"not an object", `[1,2]`, 422, "decoding json: want an object, found ["},
		{"messages not an array", `{"version":1,"messages":{}}`, 422, "messages: decoding json: want an array, found {"},
		{"truncated", exportJSON(3, "")[:200], 422, "is not an oplab timeline"},
		{"namespace after its messages", `{"version":1,"messages":[{"seq":1,"time":"2026-01-01T00:00:00Z","type":"event","object":{"kind":"Database","namespace":"lab-a","name":"a"}}],"namespace":"lab-a"}`, 200, ""},
		{"namespace after messages of another", `{"version":1,"messages":[{"seq":1,"time":"2026-01-01T00:00:00Z","type":"event","object":{"kind":"Database","namespace":"lab-b","name":"a"}}],"namespace":"lab-a"}`, 422, `messages[0]: object.namespace: "lab-b" is not the export's namespace "lab-a"`},
		{"no namespace, messages with one", `{"version":1,"messages":[{"seq":1,"time":"2026-01-01T00:00:00Z","type":"event","object":{"kind":"Database","namespace":"lab-b","name":"a"}}]}`, 422, `messages[0]: object.namespace: "lab-b" is not the export's namespace ""`},
		{"missing version", `{"namespace":"lab-a","messages":[]}`, 422, "unsupported version 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := upload(t, h, "t.json", []byte(tt.body))
			if got := replayError(w.Body.String()); w.Code != tt.code || !strings.Contains(got, tt.want) {
				t.Errorf("got %d %q, want %d containing %q", w.Code, got, tt.code, tt.want)
			}
		})
	}
}

func TestReplayPageCarriesTheFileSafely(t *testing.T) {
	h := newHarness(t)
	file := exportJSON(3, `</script><script>alert(1)</script> & more`)
	w := upload(t, h, "mine.json", []byte(file))
	if w.Code != 200 {
		t.Fatalf("replay = %d:\n%s", w.Code, w.Body)
	}
	if strings.Contains(w.Body.String(), "<script>alert") {
		t.Fatal("the file's text closed the data script element")
	}
	data := replayData(t, w.Body.String())
	var got, want any
	if err := json.Unmarshal([]byte(data), &got); err != nil {
		t.Fatalf("replay-data is not JSON: %v", err)
	}
	_ = json.Unmarshal([]byte(file), &want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("replay-data differs from the uploaded file:\n%s\nwant\n%s", data, file)
	}
	if !strings.Contains(w.Body.String(), "3 messages") {
		t.Errorf("page does not count the file's 3 messages")
	}
}

func TestReplayLimits(t *testing.T) {
	h := newHarness(t)
	t.Run("too many at once", func(t *testing.T) {
		// The others in progress hold all but a few bytes of the budget.
		replaySpool.Add(maxSpoolBytes - 100)
		defer replaySpool.Add(-(maxSpoolBytes - 100))
		w := upload(t, h, "t.json", []byte(exportJSON(1, "")))
		if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "64 MiB of replays at once") ||
			!strings.Contains(w.Body.String(), "try again") || w.Header().Get("Retry-After") == "" {
			t.Errorf("got %d %v %q, want 503 saying to try again, with Retry-After", w.Code, w.Header(), replayError(w.Body.String()))
		}
		if n := replaySpool.Load(); n != maxSpoolBytes-100 {
			t.Errorf("the refused replay left %d bytes counted, want none of its own", n-(maxSpoolBytes-100))
		}
	})
	t.Run("over the size limit", func(t *testing.T) {
		// A body larger than the limit, generated as it is read, as a
		// client sending a huge file would.
		body := io.MultiReader(strings.NewReader(`{"version":1,"messages":[`), &endless{})
		w := uploadStream(h, "big.json", body)
		if got := replayError(w.Body.String()); w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(got, "larger than the 32 MiB limit") {
			t.Errorf("got %d %q, want 413 naming the limit", w.Code, got)
		}
	})
	t.Run("no file field", func(t *testing.T) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.WriteField("other", "x")
		_ = mw.Close()
		r := httptest.NewRequest("POST", "/lab/replay", &buf)
		r.Header.Set("Content-Type", mw.FormDataContentType())
		w := httptest.NewRecorder()
		h.mux.ServeHTTP(w, r)
		if got := replayError(w.Body.String()); w.Code != 400 || !strings.Contains(got, `no field "file"`) {
			t.Errorf("got %d %q, want 400 naming the missing field", w.Code, got)
		}
	})
}

// endless is a stream of valid messages that never ends, so only the size
// limit stops it.
type endless struct {
	seq     int
	pending []byte
}

func (e *endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(e.pending) == 0 {
			e.seq++
			e.pending = fmt.Appendf(e.pending, `{"seq":%d,"time":"2026-01-01T00:00:00Z","type":"event","object":{"kind":"Database","name":"a"}},`, e.seq)
		}
		c := copy(p[n:], e.pending)
		e.pending, n = e.pending[c:], n+c
	}
	return n, nil
}

// uploadStream posts body as the file of a replay, streaming it.
func uploadStream(h *harness, name string, body io.Reader) *httptest.ResponseRecorder {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		fw, err := mw.CreateFormFile("file", name)
		if err == nil {
			_, err = io.Copy(fw, body)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	r := httptest.NewRequest("POST", "/lab/replay", pr)
	r.Header.Set("Content-Type", mw.FormDataContentType())
	w := httptest.NewRecorder()
	h.mux.ServeHTTP(w, r)
	pr.CloseWithError(io.ErrClosedPipe) // stop the writer if the handler stopped reading
	return w
}
