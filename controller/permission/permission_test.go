package permission_test

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/oplab-dev/oplab/controller/permission"
)

// The messages are the API server's own (k8s.io/apiserver's
// forbiddenMessage, RBAC's escalation check); the cluster tests in
// controller/config check them against the real one.
func TestExplain(t *testing.T) {
	sa := `User "system:serviceaccount:oplab-system:oplab"`
	cases := []struct {
		name string
		err  error
		want string
	}{
		{
			"namespaced",
			apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "shop",
				errors.New(sa+` cannot create resource "statefulsets" in API group "apps" in the namespace "lab-x"`)),
			`oplab may not "create" "statefulsets" (apps) in namespace lab-x: ask your cluster admin to grant it (see controller/config/rbac)`,
		},
		{
			"cluster-wide, core group, wrapped",
			fmt.Errorf("create lab namespace lab-y: %w", apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "lab-y",
				errors.New(sa+` cannot create resource "namespaces" in API group "" at the cluster scope`))),
			`oplab may not "create" "namespaces" (core) cluster-wide: ask your cluster admin to grant it (see controller/config/rbac)`,
		},
		{
			"a namespace itself",
			apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "lab-y",
				errors.New(sa+` cannot patch resource "namespaces" in API group "" in the namespace "lab-y"`)),
			`oplab may not "patch" "namespaces" (core) on namespace lab-y: ask your cluster admin to grant it (see controller/config/rbac)`,
		},
		{
			"subresource",
			apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "learner",
				errors.New(sa+` cannot create resource "serviceaccounts/token" in API group "" in the namespace "lab-z"`)),
			`oplab may not "create" "serviceaccounts/token" (core) in namespace lab-z: ask your cluster admin to grant it (see controller/config/rbac)`,
		},
		{
			"escalation",
			apierrors.NewForbidden(schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"}, "oplab-learner",
				errors.New(`user "system:serviceaccount:oplab-system:oplab" (groups=["system:serviceaccounts" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods/log"], Verbs:["get"]}
{APIGroups:["apps"], Resources:["statefulsets"], Verbs:["get" "list"]}`)),
			`oplab may not grant "get" "pods/log" (core) and "get", "list" "statefulsets" (apps) in a Role, because it does not hold that itself: ask your cluster admin to grant it (see controller/config/rbac)`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := permission.Explain(c.err)
			if got.Error() != c.want {
				t.Errorf("Explain:\n got %s\nwant %s", got, c.want)
			}
			if !apierrors.IsForbidden(got) || !permission.Explained(got) {
				t.Errorf("the explained error lost the API server's: IsForbidden %v, Explained %v", apierrors.IsForbidden(got), permission.Explained(got))
			}
		})
	}
}

// Other refusals mean something else and keep their own words.
func TestExplainLeavesOtherErrors(t *testing.T) {
	quota := apierrors.NewForbidden(schema.GroupResource{Group: "db.oplab.dev", Resource: "databases"}, "shop",
		errors.New("exceeded quota: databases, requested: count/databases.db.oplab.dev=1, used: count/databases.db.oplab.dev=5, limited: count/databases.db.oplab.dev=5"))
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "x")
	for _, err := range []error{nil, errors.New("plain"), quota, notFound} {
		if got := permission.Explain(err); got != err {
			t.Errorf("Explain(%v) = %v, want it unchanged", err, got)
		}
	}
}
