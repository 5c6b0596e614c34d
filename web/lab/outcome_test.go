package lab

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestDescribeAQuotaNotCountedYet: the API server's refusal while a new
// quota is not counted yet (as its quota admission words it) reaches the
// learner as what it is, a wait, not a fault of theirs and not a bare 403.
func TestDescribeAQuotaNotCountedYet(t *testing.T) {
	refused := apierrors.NewForbidden(schema.GroupResource{Group: "db.oplab.dev", Resource: "databases"}, "shop",
		errors.New("status unknown for quota: databases, resources: count/databases.db.oplab.dev"))
	res, code := describe(outcome{err: refused})
	if code != http.StatusServiceUnavailable || res.OK {
		t.Errorf("describe = %d %+v; want 503, not OK", code, res)
	}
	for _, want := range []string{"not counted the Databases in your namespace yet", "try again in a minute", "status unknown for quota"} {
		if !strings.Contains(res.Message, want) {
			t.Errorf("message %q lacks %q", res.Message, want)
		}
	}
	// Another refusal is not mistaken for it.
	other := apierrors.NewForbidden(schema.GroupResource{Group: "db.oplab.dev", Resource: "databases"}, "shop",
		errors.New("exceeded quota: databases, requested: count/databases.db.oplab.dev=1, used: count/databases.db.oplab.dev=5, limited: count/databases.db.oplab.dev=5"))
	if res, _ := describe(outcome{err: other}); strings.Contains(res.Message, "not counted") {
		t.Errorf("an exceeded quota reads %q; want the API server's own words", res.Message)
	}
}
