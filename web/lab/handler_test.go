package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/web/lab/dbview"
	"github.com/oplab-dev/oplab/web/session"
)

// recordingStore stands in for the cluster in handler tests: these tests
// are about validation and answers, not about the API server (the browser
// tests in web/e2e/lab_test.go cover that against the real one).
type recordingStore struct {
	mu    sync.Mutex
	calls []string
	count int
	err   error
}

func (s *recordingStore) record(call string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call)
	return s.err
}

func (s *recordingStore) CountDatabases(context.Context, string) (int, error) { return s.count, nil }
func (s *recordingStore) CreateDatabase(_ context.Context, ns string, in CreateInput) error {
	return s.record("create " + ns + " " + in.Name + " " + in.Engine + " " + in.Version + " " + itoa(in.Replicas) + " " + in.Pitfall)
}
func (s *recordingStore) EditDatabase(_ context.Context, _, name string, in EditInput) error {
	replicas, version := "_", "_"
	if in.Replicas != nil {
		replicas = itoa(*in.Replicas)
	}
	if in.Version != nil {
		version = *in.Version
	}
	return s.record("edit " + name + " " + replicas + " " + version)
}
func (s *recordingStore) DeleteDatabase(_ context.Context, _, name string) error {
	return s.record("delete " + name)
}
func (s *recordingStore) SetPitfall(_ context.Context, _, name, p string) error {
	return s.record("pitfall " + name + " " + p)
}
func (s *recordingStore) SetPods(_ context.Context, _, name, mode string) error {
	return s.record("pods " + name + " " + mode)
}
func (s *recordingStore) RemoveFinalizers(_ context.Context, _, name string) error {
	return s.record("unfinalize " + name)
}
func (s *recordingStore) DeleteChild(_ context.Context, _, name string, k ChildKind) error {
	return s.record("delete-child " + name + " " + string(k))
}
func (s *recordingStore) CreateUnownedService(_ context.Context, _, name string, port int32) error {
	return s.record("stray-service " + name + " " + itoa(port))
}
func (s *recordingStore) ScaleStatefulSet(_ context.Context, _, name string, n int32) error {
	return s.record("scale " + name + " " + itoa(n))
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

type noNamespaces struct{}

func (noNamespaces) Create(context.Context, string, string) error { return nil }
func (noNamespaces) MarkActed(context.Context, string) error      { return nil }
func (noNamespaces) Delete(context.Context, string) error         { return nil }
func (noNamespaces) List(context.Context) ([]labns.Namespace, error) {
	return nil, nil
}

type fixedStates []dbview.Database

func (f fixedStates) Databases(context.Context, string) ([]dbview.Database, error) { return f, nil }

func (f fixedStates) Snapshots(context.Context, string) ([]dbview.Snapshot, error) {
	return []dbview.Snapshot{}, nil
}

// fakeController is the shared controller with its namespace pauses in
// memory; the real pause gate is tested in controller/ on the real cluster.
type fakeController struct {
	mu      sync.Mutex
	running bool
	paused  map[string]bool
}

func (c *fakeController) Running() bool { return c.running }

func (c *fakeController) PauseNamespace(ns string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused == nil {
		c.paused = map[string]bool{}
	}
	c.paused[ns] = true
}

func (c *fakeController) ResumeNamespace(ns string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.paused, ns)
}

func (c *fakeController) NamespacePaused(ns string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused[ns]
}

func (c *fakeController) HandedOver(string) bool { return false }

type fakeExporter struct{}

func (fakeExporter) Export(ns string) trace.Export {
	return trace.Export{Version: trace.ExportVersion, Namespace: ns, ExportedAt: time.Unix(0, 0).UTC(), Messages: []json.RawMessage{}}
}

type harness struct {
	store  *recordingStore
	ctrl   *fakeController
	mux    *http.ServeMux
	cookie *http.Cookie
	ns     string
}

func newHarness(t *testing.T, dbs ...dbview.Database) *harness {
	t.Helper()
	return newHarnessWith(t, fixedStates(dbs))
}

// keptStates is a lab with no Databases left, only their kept snapshots.
type keptStates []dbview.Snapshot

func (keptStates) Databases(context.Context, string) ([]dbview.Database, error) {
	return []dbview.Database{}, nil
}

func (k keptStates) Snapshots(context.Context, string) ([]dbview.Snapshot, error) { return k, nil }

func newHarnessWith(t *testing.T, states States) *harness {
	t.Helper()
	return newHarnessOpts(t, Options{States: states})
}

// newHarnessOpts is a lab over opts, with a recordingStore (as h.store)
// unless opts has a Store, fakes for the sessions' namespaces, the
// controller and the exporter, and no Databases unless opts has States.
func newHarnessOpts(t *testing.T, opts Options) *harness {
	t.Helper()
	sessions, err := session.New(t.Context(), session.Options{Namespaces: noNamespaces{}})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{ctrl: &fakeController{running: true}, mux: http.NewServeMux()}
	if opts.Store == nil {
		h.store = &recordingStore{}
		opts.Store = h.store
	}
	if opts.States == nil {
		opts.States = fixedStates(nil)
	}
	opts.Sessions, opts.Controller, opts.Exporter = sessions, h.ctrl, fakeExporter{}
	New(opts).Register(h.mux)
	// Open the page once to get a session cookie, as a browser would.
	w := httptest.NewRecorder()
	h.mux.ServeHTTP(w, httptest.NewRequest("GET", "/lab", nil))
	if w.Code != http.StatusOK {
		t.Fatalf("GET /lab = %d: %s", w.Code, w.Body)
	}
	h.cookie = w.Result().Cookies()[0]
	h.ns = strings.Split(strings.Split(w.Body.String(), `data-namespace="`)[1], `"`)[0]
	return h
}

func (h *harness) post(path string, form url.Values, json bool) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", path, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if json {
		r.Header.Set("Accept", "application/json")
	}
	r.AddCookie(h.cookie)
	w := httptest.NewRecorder()
	h.mux.ServeHTTP(w, r)
	return w
}

func (h *harness) get(path string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", path, nil)
	r.AddCookie(h.cookie)
	w := httptest.NewRecorder()
	h.mux.ServeHTTP(w, r)
	return w
}

func TestFormsValidateInput(t *testing.T) {
	valid := url.Values{"name": {"orders"}, "engine": {"postgres"}, "version": {"17"}, "replicas": {"3"}}
	with := func(k, v string) url.Values {
		f := url.Values{}
		for key, vals := range valid {
			f[key] = vals
		}
		f.Set(k, v)
		return f
	}
	tests := []struct {
		name      string
		path      string
		form      url.Values
		wantCode  int
		wantField string
		wantText  string
		wantCall  string
	}{
		{"valid create", "/lab/databases", valid, 200, "", "Created Database orders", "create NS orders postgres 17 3 "},
		{"create with pitfall", "/lab/databases", with("pitfall", "status-thrash"), 200, "", "Created", "create NS orders postgres 17 3 status-thrash"},
		{"empty name", "/lab/databases", with("name", ""), 422, "name", "name: required", ""},
		{"uppercase name", "/lab/databases", with("name", "Orders_DB"), 422, "name", `"Orders_DB" is not a valid name`, ""},
		{"name too long", "/lab/databases", with("name", strings.Repeat("a", 41)), 422, "name", "at most 40", ""},
		{"replicas not a number", "/lab/databases", with("replicas", "three"), 422, "replicas", `"three" is not a whole number`, ""},
		{"replicas zero", "/lab/databases", with("replicas", "0"), 422, "replicas", "out of range", ""},
		{"replicas 7 is left to the API server", "/lab/databases", with("replicas", "7"), 200, "", "Created", "create NS orders postgres 17 7 "},
		{"bad engine", "/lab/databases", with("engine", "oracle"), 422, "engine", `"oracle" is not an engine`, ""},
		{"bad version", "/lab/databases", with("version", "17; rm -rf"), 422, "version", "is not a version", ""},
		{"unknown pitfall", "/lab/databases", with("pitfall", "gremlins"), 422, "pitfall", `unknown pitfall "gremlins"`, ""},
		{"edit", "/lab/databases/orders/edit", url.Values{"replicas": {"2"}, "version": {""}}, 200, "", "Patched orders", "edit orders 2 "},
		{"edit replicas only", "/lab/databases/orders/edit", url.Values{"replicas": {"3"}, "version": {"17"}, "origReplicas": {"1"}, "origVersion": {"17"}}, 200, "", "Patched orders: replicas 3.", "edit orders 3 _"},
		{"edit version only", "/lab/databases/orders/edit", url.Values{"replicas": {"3"}, "version": {""}, "origReplicas": {"3"}, "origVersion": {"17"}}, 200, "", "version (engine default)", "edit orders _ "},
		{"edit nothing changed", "/lab/databases/orders/edit", url.Values{"replicas": {"3"}, "version": {"17"}, "origReplicas": {"3"}, "origVersion": {"17"}}, 200, "", "Nothing to patch", ""},
		{"edit bad replicas", "/lab/databases/orders/edit", url.Values{"replicas": {"-1"}}, 422, "replicas", "out of range", ""},
		{"bad name in path", "/lab/databases/Bad_Name/delete", nil, 422, "name", "not a valid name", ""},
		{"delete", "/lab/databases/orders/delete", nil, 200, "", "finalizer", "delete orders"},
		{"pitfall off", "/lab/databases/orders/pitfall", url.Values{"pitfall": {""}}, 200, "", "off", "pitfall orders "},
		{"pitfall unknown", "/lab/databases/orders/pitfall", url.Values{"pitfall": {"x"}}, 422, "pitfall", "unknown pitfall", ""},
		{"pods crash loop", "/lab/databases/orders/pods", url.Values{"pods": {"crash-loop"}}, 200, "", "db.oplab.dev/pods=crash-loop", "pods orders crash-loop"},
		{"pods default", "/lab/databases/orders/pods", url.Values{"pods": {""}}, 200, "", "Ready at once again", "pods orders "},
		{"pods unknown", "/lab/databases/orders/pods", url.Values{"pods": {"slow"}}, 422, "pods", `unknown pods mode "slow"`, ""},
		{"child statefulset", "/lab/databases/orders/children/statefulset/delete", nil, 200, "", "recreates", "delete-child orders statefulset"},
		{"child not in list", "/lab/databases/orders/children/namespace/delete", nil, 422, "kind", `"namespace" is not a child`, ""},
		{"scale by hand", "/lab/databases/orders/statefulset/scale", url.Values{"replicas": {"0"}}, 200, "", "by hand", "scale orders 0"},
		{"scale too far", "/lab/databases/orders/statefulset/scale", url.Values{"replicas": {"11"}}, 422, "stsReplicas", "out of range", ""},
		{"finalizers", "/lab/databases/orders/finalizers/remove", nil, 200, "", "no final snapshot", "unfinalize orders"},
		{"controller bogus", "/lab/controller/reboot", nil, 422, "action", `"reboot" is not a controller action`, ""},
		{"scenario unknown", "/lab/scenarios/nope", nil, 422, "scenario", `unknown scenario "nope"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			w := h.post(tt.path, tt.form, true)
			var res Result
			if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil {
				t.Fatalf("answer is not JSON: %v: %s", err, w.Body)
			}
			if w.Code != tt.wantCode || res.Field != tt.wantField || !strings.Contains(res.Message, tt.wantText) {
				t.Errorf("got %d field=%q %q; want %d field=%q containing %q", w.Code, res.Field, res.Message, tt.wantCode, tt.wantField, tt.wantText)
			}
			want := []string(nil)
			if tt.wantCall != "" {
				want = []string{strings.Replace(tt.wantCall, "NS", h.ns, 1)}
			}
			if strings.Join(h.store.calls, "|") != strings.Join(want, "|") {
				t.Errorf("store calls = %q, want %q", h.store.calls, want)
			}
		})
	}
}

func TestFormWithoutJavaScriptRedirectsWithFlash(t *testing.T) {
	h := newHarness(t)
	w := h.post("/lab/databases", url.Values{"name": {"Bad!"}, "replicas": {"1"}, "scenario": {"first-reconcile"}}, false)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/lab?scenario=first-reconcile&ready=1" {
		t.Fatalf("got %d Location=%q; want 303 back to the scenario", w.Code, w.Header().Get("Location"))
	}
	page := h.get("/lab").Body.String()
	for _, want := range []string{`class="flash flash-error"`, `not a valid name`, `value="Bad!"`, `class="invalid"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page after a failed create lacks %q", want)
		}
	}
	if strings.Contains(h.get("/lab").Body.String(), "flash-error") {
		t.Error("the flash was shown twice")
	}
}

func TestAPIServerErrorsKeepTheirWording(t *testing.T) {
	h := newHarness(t)
	h.store.err = apierrors.NewInvalid(schema.GroupKind{Group: "db.oplab.dev", Kind: "Database"}, "orders", field.ErrorList{
		field.Invalid(field.NewPath("spec", "replicas"), 7, "spec.replicas in body should be less than or equal to 5"),
	})
	w := h.post("/lab/databases", url.Values{"name": {"orders"}, "replicas": {"7"}}, true)
	var res Result
	_ = json.Unmarshal(w.Body.Bytes(), &res)
	if w.Code != 422 || res.Field != "replicas" || !strings.Contains(res.Message, "spec.replicas: Invalid value: 7") {
		t.Errorf("got %d %+v; want 422 on replicas quoting the API server", w.Code, res)
	}
	h.store.err = errors.New("connection refused")
	w = h.post("/lab/databases/orders/delete", nil, true)
	if w.Code != 500 || !strings.Contains(w.Body.String(), "connection refused") {
		t.Errorf("got %d %s; want 500 naming the cause", w.Code, w.Body)
	}
}

func TestCapOnDatabases(t *testing.T) {
	h := newHarness(t)
	h.store.count = 5
	w := h.post("/lab/databases", url.Values{"name": {"sixth"}, "replicas": {"1"}}, true)
	if w.Code != 422 || !strings.Contains(w.Body.String(), "already has 5 Databases") {
		t.Errorf("got %d %s; want the cap to refuse", w.Code, w.Body)
	}
	if len(h.store.calls) != 0 {
		t.Errorf("store was called: %v", h.store.calls)
	}
}

func TestWritesNeedASession(t *testing.T) {
	h := newHarness(t)
	r := httptest.NewRequest("POST", "/lab/databases/orders/delete", nil)
	w := httptest.NewRecorder()
	h.mux.ServeHTTP(w, r)
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "no lab session") {
		t.Errorf("got %d %s; want 403 no lab session", w.Code, w.Body)
	}
}

func TestFormBodyLimit(t *testing.T) {
	h := newHarness(t)
	w := h.post("/lab/databases", url.Values{"name": {strings.Repeat("a", maxFormBytes)}}, true)
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "larger than the 64 KiB") {
		t.Errorf("got %d %s; want the oversized form refused with 413, in words", w.Code, w.Body)
	}
}

func TestPing(t *testing.T) {
	h := newHarness(t)
	if w := h.get("/lab/ping"); w.Code != http.StatusNoContent {
		t.Errorf("ping with a session = %d, want 204", w.Code)
	}
	w := httptest.NewRecorder()
	h.mux.ServeHTTP(w, httptest.NewRequest("GET", "/lab/ping", nil))
	if w.Code != http.StatusForbidden {
		t.Errorf("ping without a session = %d, want 403", w.Code)
	}
}

func TestControllerSwitchPausesOnlyTheLearnersNamespace(t *testing.T) {
	h := newHarness(t)
	w := h.post("/lab/controller/stop", nil, true)
	if w.Code != 200 || !h.ctrl.NamespacePaused(h.ns) || !strings.Contains(w.Body.String(), `"controllerRunning":false`) ||
		!strings.Contains(w.Body.String(), `"paused":true`) {
		t.Fatalf("stop: %d %s paused=%v; want the namespace paused and the answer saying so", w.Code, w.Body, h.ctrl.NamespacePaused(h.ns))
	}
	if !h.ctrl.running {
		t.Error("a learner's Stop stopped the whole controller")
	}
	if len(h.ctrl.paused) != 1 {
		t.Errorf("paused namespaces = %v, want only %s", h.ctrl.paused, h.ns)
	}
	if !strings.Contains(h.get("/lab").Body.String(), "Your namespace is paused") {
		t.Error("page does not say the controller is stopped for this namespace")
	}
	if w := h.post("/lab/controller/stop", nil, true); !strings.Contains(w.Body.String(), "already paused") {
		t.Errorf("second stop: %s; want already paused", w.Body)
	}
	w = h.post("/lab/controller/start", nil, true)
	if w.Code != 200 || h.ctrl.NamespacePaused(h.ns) || !strings.Contains(w.Body.String(), `"controllerRunning":true`) {
		t.Fatalf("start: %d %s paused=%v", w.Code, w.Body, h.ctrl.NamespacePaused(h.ns))
	}
	// With the whole controller stopped by the instructor, a learner's
	// Start resumes the namespace and says who has stopped it.
	h.post("/lab/controller/stop", nil, true)
	h.ctrl.running = false
	if w := h.post("/lab/controller/start", nil, true); !strings.Contains(w.Body.String(), "instructor has stopped the controller") ||
		!strings.Contains(w.Body.String(), `"controllerRunning":false`) {
		t.Errorf("start while stopped for all: %s", w.Body)
	}
}

func TestPageModelHasThePauseAndTheLearnersKubectlLine(t *testing.T) {
	ctrl := &fakeController{running: true}
	sessions, err := session.New(t.Context(), session.Options{Namespaces: noNamespaces{}})
	if err != nil {
		t.Fatal(err)
	}
	h := New(Options{Controller: ctrl, Sessions: sessions, States: fixedStates(nil), KubectlLine: "kubectl --kubeconfig /k get databases -w"})
	r := httptest.NewRequest("GET", "/lab", nil)
	ctrl.PauseNamespace("lab-a")
	p, err := h.pageModel(r, "lab-a")
	if err != nil {
		t.Fatal(err)
	}
	if p.KubectlLine != "kubectl --kubeconfig /k get databases -w -n lab-a" || !p.Paused || p.ControllerRunning {
		t.Errorf("lab-a: KubectlLine %q Paused %v ControllerRunning %v; want the line with -n lab-a, paused, not reconciling", p.KubectlLine, p.Paused, p.ControllerRunning)
	}
	if p, _ := h.pageModel(r, "lab-b"); p.Paused || !p.ControllerRunning || p.KubectlLine != "kubectl --kubeconfig /k get databases -w -n lab-b" {
		t.Errorf("lab-b: Paused %v ControllerRunning %v KubectlLine %q; want another learner unaffected", p.Paused, p.ControllerRunning, p.KubectlLine)
	}
	if p, _ := New(Options{Controller: ctrl, Sessions: sessions, States: fixedStates(nil)}).pageModel(r, "lab-a"); p.KubectlLine != "" {
		t.Errorf("no server line: KubectlLine %q, want none", p.KubectlLine)
	}
}

func TestPageRendersState(t *testing.T) {
	dt := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	h := newHarness(t, dbview.Database{
		Name: "orders", Engine: "postgres", Replicas: 3, Generation: 4, ObservedGeneration: 3, Stale: true,
		Finalizers: []string{controller.Finalizer}, Terminating: true, DeletionTimestamp: &dt, HeldBy: []string{controller.Finalizer},
		Conditions: []dbview.Condition{{Type: "Ready", Status: "False", Reason: "Deleting", History: []dbview.Change{{Status: "True"}, {Status: "False", Transition: true}}}},
		Owned:      []dbview.Node{{Kind: "StatefulSet", Name: "orders", Summary: "0/3 ready", Children: []dbview.Node{{Kind: "Pod", Name: "orders-0", Deleting: true}}}},
		Unowned:    []dbview.Node{{Kind: "ConfigMap", Name: "orders-final-snapshot", Note: "not owned"}},
		Events:     []dbview.Event{{Type: "Warning", Reason: "SnapshotFailed", Message: "boom <script>"}},
	})
	page := h.get("/lab?scenario=finalizer").Body.String()
	for _, want := range []string{
		`id="db-orders"`, "Terminating", "Held by the finalizer", "db.oplab.dev/final-snapshot",
		`class="generation" data-field="generation">4<`, `class="observed" data-field="observed">3<`, "stale", "Ready: 2 values seen", "orders-final-snapshot",
		"orders-0", "SnapshotFailed", "boom &lt;script&gt;", "Try it live: A finalizer at work", `action="/lab/scenarios/finalizer"`,
		`action="/lab/databases/orders/finalizers/remove"`, `<script type="module" src="/static/lab/main.js">`, `id="loop"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if bad := h.get("/lab?scenario=nope").Body.String(); !strings.Contains(bad, `unknown scenario &#34;nope&#34;`) && !strings.Contains(bad, `unknown scenario &quot;nope&quot;`) {
		t.Errorf("unknown scenario not reported")
	}
}

func TestPreview(t *testing.T) {
	h := newHarness(t)
	w := h.get("/lab/preview?name=orders&engine=mysql&replicas=2&pitfall=drop-events")
	want := "apiVersion: db.oplab.dev/v1alpha1\nkind: Database\nmetadata:\n  annotations:\n    db.oplab.dev/pitfall: drop-events\n  name: orders\n  namespace: " + h.ns + "\nspec:\n  engine: mysql\n  replicas: 2\n"
	if w.Code != 200 || w.Body.String() != want {
		t.Errorf("preview = %d\n%s\nwant\n%s", w.Code, w.Body, want)
	}
	if w := h.get("/lab/preview?name=x&replicas=lots"); w.Code != 422 || !strings.Contains(w.Body.String(), "replicas") {
		t.Errorf("bad preview = %d %s", w.Code, w.Body)
	}
	if page := h.get("/lab?preview=1&name=shop&replicas=4").Body.String(); !strings.Contains(page, "name: shop") {
		t.Error("the no-JS preview button does not render the YAML")
	}
	// With a Database on the page the create form is drawn closed, but not
	// when it is what the preview was asked from.
	h = newHarness(t, dbview.Database{Name: "orders", Namespace: "lab-a"})
	const open = `<details class="create" open>`
	if page := h.get("/lab").Body.String(); strings.Contains(page, open) {
		t.Error("the create form is open on a page with a Database")
	}
	if page := h.get("/lab?preview=1&name=shop&replicas=4").Body.String(); !strings.Contains(page, open) || !strings.Contains(page, `formaction="/lab#preview"`) {
		t.Error("the no-JS preview closed the form it was asked from, or does not come back at the preview")
	}
}

func upload(t *testing.T, h *harness, name string, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("file", name)
	_, _ = fw.Write(body)
	_ = mw.Close()
	r := httptest.NewRequest("POST", "/lab/replay", &buf)
	r.Header.Set("Content-Type", mw.FormDataContentType())
	w := httptest.NewRecorder()
	h.mux.ServeHTTP(w, r)
	return w
}

func TestExportAndReplay(t *testing.T) {
	h := newHarness(t)
	w := h.get("/lab/export")
	disposition, params, _ := mime.ParseMediaType(w.Header().Get("Content-Disposition"))
	if w.Code != 200 || disposition != "attachment" || !strings.HasPrefix(params["filename"], "oplab-timeline-"+h.ns) {
		t.Fatalf("export = %d %v", w.Code, w.Header())
	}
	exported, _ := io.ReadAll(w.Body)
	ok := upload(t, h, "mine.json", exported)
	if ok.Code != 200 || !strings.Contains(ok.Body.String(), `id="replay-data"`) || !strings.Contains(ok.Body.String(), `data-mode="replay"`) {
		t.Errorf("replay of a fresh export = %d, want the player", ok.Code)
	}
	if strings.Contains(ok.Body.String(), `method="post" action="/lab/databases`) {
		t.Error("replay page offers forms that write to the cluster")
	}
	tests := []struct{ name, body, want string }{
		{"not json", "hello", "is not an oplab timeline"},
		{"wrong version", `{"version": 9, "messages": []}`, "unsupported version 9"},
		{"seq going back", `{"version":1,"namespace":"lab-a","messages":[{"seq":2,"time":"2026-01-01T00:00:00Z","type":"event","object":{"kind":"Database","name":"a"}},{"seq":1,"time":"2026-01-01T00:00:00Z","type":"event","object":{"kind":"Database","name":"a"}}]}`, "messages[1]: seq"},
	}
	for _, tt := range tests {
		w := upload(t, h, "bad.json", []byte(tt.body))
		if w.Code != 422 || !strings.Contains(w.Body.String(), tt.want) {
			t.Errorf("%s: got %d, want 422 containing %q", tt.name, w.Code, tt.want)
		}
	}
	r := httptest.NewRequest("POST", "/lab/replay", strings.NewReader("x"))
	w = httptest.NewRecorder()
	h.mux.ServeHTTP(w, r)
	if w.Code != 400 || !strings.Contains(w.Body.String(), "choose an exported timeline") {
		t.Errorf("no file: got %d", w.Code)
	}
}

func TestPageRendersKeptSnapshots(t *testing.T) {
	tests := []struct {
		name   string
		kept   []dbview.Snapshot
		want   []string
		absent []string
	}{
		{
			name:   "none: the section is there for the stream, hidden",
			want:   []string{`id="kept"`, `hidden`, `id="snapshots"`},
			absent: []string{`class="snapshot"`},
		},
		{
			name: "one: name, Database, generation and the note",
			kept: []dbview.Snapshot{{Name: "shop-final-snapshot", Database: "shop", Generation: 2, Time: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC), Note: "nothing owns it <b>"}},
			want: []string{
				`id="snap-shop-final-snapshot"`, "Snapshots kept after delete", "shop-final-snapshot",
				"from Database <code>shop</code>, generation 2", "nothing owns it &lt;b&gt;",
			},
			absent: []string{"uid"},
		},
		{
			name: "with the uid it records: the uid beside the Database (a challenge asks for it)",
			kept: []dbview.Snapshot{{Name: "shop-final-snapshot", Database: "shop", DatabaseUID: "0f6c1a52-9d2e-4b1a-8c3e-1d2f3a4b5c6d", Generation: 2}},
			want: []string{`from Database <code>shop</code> (uid <code class="uid">0f6c1a52-9d2e-4b1a-8c3e-1d2f3a4b5c6d</code>), generation 2`},
		},
		{
			name: "lost: a Database deleted without a snapshot is listed, and why",
			kept: []dbview.Snapshot{{Name: "cart-final-snapshot", Database: "cart", DatabaseUID: "u-1", Generation: 3, Lost: true,
				Time: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC), Note: "the no-finalizer pitfall was on"}},
			want: []string{
				`class="snapshot lost" id="snap-cart-final-snapshot"`, "no snapshot</span> Database <b>cart</b>",
				`(uid <code class="uid">u-1</code>), generation 3: deleted without a snapshot,`,
				"ConfigMap cart-final-snapshot was never written: the no-finalizer pitfall was on.",
			},
			absent: []string{"from Database"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := newHarnessWith(t, keptStates(tt.kept)).get("/lab").Body.String()
			section := page[strings.Index(page, `<section id="kept"`):]
			section = section[:strings.Index(section, "</section>")]
			for _, want := range tt.want {
				if !strings.Contains(section, want) {
					t.Errorf("kept section lacks %q:\n%s", want, section)
				}
			}
			for _, bad := range tt.absent {
				if strings.Contains(section, bad) {
					t.Errorf("kept section has %q:\n%s", bad, section)
				}
			}
			if len(tt.kept) > 0 && strings.Contains(section[:strings.Index(section, ">")], "hidden") {
				t.Errorf("kept section hidden with %d snapshots", len(tt.kept))
			}
		})
	}
}
