package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/labns"
)

// TestKubectlWorksFromTheFirstSecond is issue 10 §5 through the real
// server: as soon as /lab shows the namespace's name, it exists with the
// Database quota the server was configured with, and the API server holds
// any client to that cap.
func TestKubectlWorksFromTheFirstSecond(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, ns := e.learner(t)
	var quota corev1.ResourceQuota
	if err := e.client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: labns.QuotaName}, &quota); err != nil {
		t.Fatalf("right after /lab showed %s: quota: %v; want the namespace and its quota there", ns, err)
	}
	if got := quota.Spec.Hard[labns.DatabaseQuotaResource]; got.Value() != 5 {
		t.Errorf("quota %s = %s; want 5, the server's MaxDatabasesPerNamespace", labns.DatabaseQuotaResource, got.String())
	}
	for i := range 6 {
		db := &v1alpha1.Database{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("k-", i)},
			Spec:       v1alpha1.DatabaseSpec{Engine: "postgres", Replicas: 1},
		}
		err := e.client.Create(t.Context(), db)
		if i < 5 && err != nil {
			t.Fatalf("create Database %d as kubectl would: %v", i, err)
		}
		if i == 5 && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), string(labns.DatabaseQuotaResource))) {
			t.Fatalf("sixth Database: %v; want the API server's quota refusal naming %s", err, labns.DatabaseQuotaResource)
		}
	}
	// The lab refuses the sixth too, in words.
	code, res := postForm(t, c, e.http.URL, "/lab/databases", url.Values{"name": {"one-more"}, "replicas": {"1"}})
	if code == http.StatusOK || res.OK || !strings.Contains(res.Message, "5") {
		t.Errorf("lab create over the cap = %d %+v; want a refusal that says the cap", code, res)
	}
	quotaIsGivenBack(t, e, ns)
}

// quotaIsGivenBack deletes one of the namespace's five Databases and then
// expects a new one to fit: the quota's usage must fall with the delete,
// or a learner who ever made five Databases could never make another.
func quotaIsGivenBack(t *testing.T, e *testEnv, ns string) {
	t.Helper()
	gone := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "k-0"}}
	if err := e.client.Delete(t.Context(), gone); err != nil {
		t.Fatalf("delete Database k-0: %v", err)
	}
	again := &v1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "k-again"},
		Spec:       v1alpha1.DatabaseSpec{Engine: "postgres", Replicas: 1},
	}
	var err error
	for range 120 { // the delete waits for the finalizer's snapshot; then the quota controller
		if err = e.client.Create(t.Context(), again); err == nil {
			return
		}
		if !apierrors.IsForbidden(err) {
			t.Fatalf("create after a delete: %v; want success or the quota's refusal", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("after deleting one of five Databases, a new one is still refused 60 s later: %v; the quota never gave its usage back", err)
}
