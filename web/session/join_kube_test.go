package session_test

import (
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/web/session"
)

// TestNoNamespaceWithoutTheJoinCode asks the API server, not the table:
// a visitor refused for the join code leaves nothing in the cluster.
func TestNoNamespaceWithoutTheJoinCode(t *testing.T) {
	c := kubeClient(t)
	const prefix = "joincode-"
	m, err := session.New(t.Context(), session.Options{
		Namespaces:      labns.KubeNamespaces{Client: c, Prefix: prefix},
		NamespacePrefix: prefix, JoinCode: "blue-otter", IdleTimeout: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	labNamespaces := func() []string {
		t.Helper()
		var list corev1.NamespaceList
		if err := c.List(t.Context(), &list, client.MatchingLabels{labns.InstanceLabel: labns.Instance(prefix)}); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, ns := range list.Items {
			names = append(names, ns.Name)
		}
		return names
	}
	for _, target := range []string{"/lab", "/lab?join=red-otter"} {
		_, err := m.Begin(httptest.NewRecorder(), httptest.NewRequest("GET", target, nil))
		if !errors.Is(err, session.ErrJoin) {
			t.Errorf("Begin(%s) = %v, want ErrJoin", target, err)
		}
	}
	if got := labNamespaces(); len(got) != 0 {
		t.Fatalf("namespaces exist after refused joins: %v", got)
	}
	s, err := m.BeginAs(httptest.NewRecorder(), httptest.NewRequest("GET", "/lab?join=blue-otter", nil), "Ada")
	if err != nil {
		t.Fatalf("Begin with the join code: %v", err)
	}
	deleteLater(t, c, s.Namespace)
	if got := labNamespaces(); len(got) != 1 || got[0] != s.Namespace {
		t.Errorf("namespaces after joining = %v, want [%s]", got, s.Namespace)
	}
}
