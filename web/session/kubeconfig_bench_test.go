package session_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkIssueKubeconfig measures what a learner's download costs
// against the real API server: the first one in a namespace (ServiceAccount,
// Role and RoleBinding created, then a token) and each later one (all three
// found as they should be, then a token).
//
//	go test -run '^$' -bench BenchmarkIssueKubeconfig -benchtime 20x ./web/session/
func BenchmarkIssueKubeconfig(b *testing.B) {
	e := newLearnerEnv(b, b.Context(), nil)
	namespace := func(b *testing.B) string {
		b.Helper()
		s, err := e.m.Begin(httptest.NewRecorder(), httptest.NewRequest("GET", "/lab", nil))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			_ = e.admin.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.Namespace}})
		})
		return s.Namespace
	}
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			ns := namespace(b)
			b.StartTimer()
			if _, err := e.issuer.Issue(b.Context(), ns, time.Now().Add(time.Hour)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("again", func(b *testing.B) {
		ns := namespace(b)
		for b.Loop() {
			if _, err := e.issuer.Issue(b.Context(), ns, time.Now().Add(time.Hour)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
