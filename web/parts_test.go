package web

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/web/kubectl"
	"github.com/oplab-dev/oplab/web/lab/dbview"
	"github.com/oplab-dev/oplab/web/learn"
	"github.com/oplab-dev/oplab/web/session"
	"github.com/oplab-dev/oplab/web/stream"
)

// The server's parts as cmd/oplab/app hands them over, with no API server
// behind them, for the tests whose point is the routes and their wiring,
// not Kubernetes (the end-to-end tests, web/e2e, run the real ones).

// memNamespaces is the session table's cluster, in memory.
type memNamespaces struct {
	mu      sync.Mutex
	created []string
}

func (m *memNamespaces) Create(_ context.Context, name, _ string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.created = append(m.created, name)
	return nil
}

func (m *memNamespaces) MarkActed(context.Context, string) error         { return nil }
func (m *memNamespaces) Delete(context.Context, string) error            { return nil }
func (m *memNamespaces) List(context.Context) ([]labns.Namespace, error) { return nil, nil }

func (m *memNamespaces) names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.created...)
}

// noStates is a lab with no Databases yet.
type noStates struct{}

func (noStates) Databases(context.Context, string) ([]dbview.Database, error) { return nil, nil }
func (noStates) Snapshots(context.Context, string) ([]dbview.Snapshot, error) { return nil, nil }

// fakeMinter mints a kubeconfig that names the namespace.
type fakeMinter struct{}

func (fakeMinter) Issue(_ context.Context, ns string, until time.Time) (labns.Credentials, error) {
	return labns.Credentials{Kubeconfig: []byte("namespace: " + ns + "\n"), Expires: until}, nil
}

// fakeParts are the server's parts with no cluster behind them.
func fakeParts(t *testing.T) (Options, *memNamespaces) {
	t.Helper()
	ctx := t.Context()
	rec := trace.NewRecorder(trace.RecorderOptions{})
	hub := stream.NewHub(rec, stream.HubOptions{})
	go rec.Run(ctx)
	go hub.Run(ctx)
	ns := &memNamespaces{}
	sessions, err := session.New(ctx, session.Options{Namespaces: ns})
	if err != nil {
		t.Fatal(err)
	}
	scheme := mustFakeScheme(t)
	content, err := learn.LoadContent()
	if err != nil {
		t.Fatal(err)
	}
	return Options{
		Client:      fake.NewClientBuilder().WithScheme(scheme).Build(),
		Sessions:    sessions,
		States:      noStates{},
		Kubeconfigs: fakeMinter{},
		// The terminal, whose commands these tests refuse before any runs.
		Kubectl:    &kubectl.Runner{Minter: fakeMinter{}},
		Recorder:   rec,
		Hub:        hub,
		Controller: stubSwitch{},
		Content:    content,
	}, ns
}

func mustFakeScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}
