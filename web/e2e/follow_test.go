package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/web/classroom"
)

// dialStream opens /ws+query with c's cookies; it returns the response when
// the upgrade is refused.
func (e *testEnv) dialStream(t *testing.T, c *http.Client, query string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	u, _ := url.Parse(e.http.URL)
	hdr := http.Header{"Origin": {e.http.URL}}
	if c != nil {
		for _, ck := range c.Jar.Cookies(u) {
			hdr.Add("Cookie", ck.String())
		}
	}
	conn, resp, err := websocket.DefaultDialer.DialContext(t.Context(), "ws://"+u.Host+"/ws"+query, hdr)
	if err == nil {
		t.Cleanup(func() { conn.Close() })
	}
	return conn, resp, err
}

type wireMessage struct {
	Seq    uint64 `json:"seq"`
	Type   string `json:"type"`
	Object struct {
		Kind, Namespace, Name string
	} `json:"object"`
	State json.RawMessage `json:"state"`
}

// readUntil reads frames until want holds for a message, failing after the
// deadline; it returns every message read.
func readUntil(t *testing.T, conn *websocket.Conn, what string, want func(wireMessage) bool) []wireMessage {
	t.Helper()
	var all []wireMessage
	end := time.Now().Add(deadline)
	for time.Now().Before(end) {
		_ = conn.SetReadDeadline(end)
		_, data, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		var batch []wireMessage
		if err := json.Unmarshal(data, &batch); err != nil {
			t.Fatalf("a frame is not a JSON array: %v", err)
		}
		all = append(all, batch...)
		for _, m := range batch {
			if want(m) {
				return all
			}
		}
	}
	t.Fatalf("timed out waiting for %s", what)
	return nil
}

// submit posts a form as a browser without JavaScript does.
func submit(t *testing.T, c *http.Client, u string, form url.Values) int {
	t.Helper()
	resp, err := c.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func postJSON(t *testing.T, c *http.Client, u, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, got := do(t, c, req)
	return resp.StatusCode, got
}

func TestFollowThePresenterStream(t *testing.T) {
	t.Parallel()
	e := needClass(t)
	t.Cleanup(e.server.Classroom().StopPresenting)
	e.server.Classroom().StopPresenting()
	learner, own := e.learner(t)

	// Nobody presents: following is a conflict, said in words.
	_, resp, err := e.dialStream(t, learner, "?follow=presenter")
	if err == nil || resp == nil || resp.StatusCode != http.StatusConflict {
		t.Fatalf("follow with nobody presenting: %v (status %v), want 409", err, resp)
	}
	if b, _ := io.ReadAll(resp.Body); !strings.Contains(string(b), "nobody is presenting") {
		t.Errorf("409 body %q does not say nobody presents", b)
	}
	if _, resp, err := e.dialStream(t, learner, "?follow=someone"); err == nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("follow=someone: %v, want 400", err)
	}

	// The instructor presents from their browser's own lab session.
	ic, presenterNS := e.instructorLab(t)
	if code := submit(t, ic, e.http.URL+"/instructor/present", url.Values{"name": {"Ada"}}); code != http.StatusSeeOther {
		t.Fatalf("Present = %d, want 303", code)
	}
	if ns, ok := e.server.Classroom().Presenting(); !ok || ns != presenterNS {
		t.Fatalf("Presenting() = %q, %v; want the instructor's lab namespace %q", ns, ok, presenterNS)
	}
	// A learner can't present: the instructor page refuses without the cookie.
	if code := submit(t, learner, e.http.URL+"/instructor/present", url.Values{"name": {"Mallory"}}); code != http.StatusUnauthorized {
		t.Errorf("a learner's Present = %d, want 401", code)
	}

	// The follower streams the presenter's namespace, not their own.
	conn, _, err := e.dialStream(t, learner, "?follow=presenter")
	if err != nil {
		t.Fatalf("follow while presenting: %v", err)
	}
	db := &v1alpha1.Database{}
	db.Namespace, db.Name = presenterNS, "shown"
	db.Spec.Engine, db.Spec.Replicas = "postgres", 1
	if err := e.client.Create(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	msgs := readUntil(t, conn, "the presenter's Database on the follower's stream", func(m wireMessage) bool {
		return m.Object.Kind == "Database" && m.Object.Namespace == presenterNS && m.Object.Name == "shown"
	})
	sawState := false
	for _, m := range msgs {
		if m.Object.Namespace == own {
			t.Errorf("the follow stream carried the follower's own namespace: %+v", m)
		}
		if m.Object.Kind == "Classroom" {
			var st classroom.State
			if err := json.Unmarshal(m.State, &st); err != nil {
				t.Fatal(err)
			}
			sawState = sawState || (st.Presenting && st.Name == "Ada")
		}
	}
	if !sawState {
		t.Error("the follower's stream carried no classroom state naming Ada")
	}

	// Only the presenter's session updates what followers see.
	view := `{"selected":"shown","path":"/lab","paused":true,"seq":7,"speed":1}`
	if code, body := postJSON(t, learner, e.http.URL+"/lab/present", view); code != http.StatusForbidden {
		t.Errorf("a learner's presenter update = %d %q, want 403", code, body)
	}
	if code, _ := postJSON(t, &http.Client{}, e.http.URL+"/lab/present", view); code != http.StatusForbidden {
		t.Errorf("a presenter update without a session = %d, want 403", code)
	}
	if code, body := postJSON(t, ic, e.http.URL+"/lab/present", `{"selected":"shown","path":"https://evil.example/","speed":1}`); code != http.StatusUnprocessableEntity || !strings.Contains(body, "path") {
		t.Errorf("an off-site path = %d %q, want 422 naming the path", code, body)
	}
	if code, body := postJSON(t, ic, e.http.URL+"/lab/present", view); code != http.StatusNoContent {
		t.Fatalf("the presenter's update = %d %q, want 204", code, body)
	}
	readUntil(t, conn, "the presenter's paused view", func(m wireMessage) bool {
		var st classroom.State
		return m.Object.Kind == "Classroom" && json.Unmarshal(m.State, &st) == nil && st.View != nil && st.View.Paused && st.View.Seq == 7 && st.View.Selected == "shown"
	})
	// A page without a lab gets the classroom state alone.
	if _, resp, err := e.dialStream(t, nil, "?classroom=1"); err == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("/ws?classroom=1 without a session: %v, want 403", err)
	}
	gc, _, err := e.dialStream(t, learner, "?classroom=1")
	if err != nil {
		t.Fatalf("/ws?classroom=1: %v", err)
	}
	for _, m := range readUntil(t, gc, "the classroom state on the global stream", func(m wireMessage) bool { return m.Object.Kind == "Classroom" }) {
		if m.Object.Namespace != "" {
			t.Errorf("/ws?classroom=1 carried a namespace's message: %+v", m)
		}
	}

	// Stop presenting: following is a conflict again.
	if code := submit(t, ic, e.http.URL+"/instructor/present/stop", nil); code != http.StatusSeeOther {
		t.Fatalf("Stop presenting = %d", code)
	}
	if _, resp, err := e.dialStream(t, learner, "?follow=presenter"); err == nil || resp.StatusCode != http.StatusConflict {
		t.Errorf("follow after Stop presenting: %v, want 409", err)
	}
	if code, _ := postJSON(t, ic, e.http.URL+"/lab/present", view); code != http.StatusForbidden {
		t.Errorf("an update after Stop presenting = %d, want 403", code)
	}
}
