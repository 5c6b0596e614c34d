package judge_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/lessons/judge"
	"github.com/oplab-dev/oplab/lessons/judge/judgetest"
)

// TestOperatorOrChart breaks and uninstalls both installs with the
// learner's own kubectl identity, then answers the question: wrongly first,
// which leaves the task to do, then rightly.
func TestOperatorOrChart(t *testing.T) {
	t.Parallel() // its own namespace
	judgetest.Run(t, "operator-or-chart", func(ctx context.Context, env judgetest.SolveEnv) error {
		meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: env.Namespace} }
		if err := env.Learner.Delete(ctx, &corev1.Service{ObjectMeta: meta("billing")}); err != nil {
			return err
		}
		// Half the task: the operator's Service comes back, and the task
		// waits for the plain one.
		check, _ := judge.LookupCheck("operator-or-chart/self-heal")
		var last judge.Result
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			r, err := check(ctx, judge.Env{Namespace: env.Namespace, Client: env.Client, Trace: env.Trace()})
			last = r
			return err == nil && strings.Contains(r.Detail, "back already"), nil
		})
		if err != nil {
			return fmt.Errorf("the operator's Service was not seen back (last: %+v): %w", last, err)
		}
		if last.Done || !strings.Contains(last.Detail, "delete Service billing-chart") {
			return fmt.Errorf("with billing-chart's Service still there, self-heal says %+v; want not done, asking for that delete", last)
		}
		if err := env.Learner.Delete(ctx, &corev1.Service{ObjectMeta: meta("billing-chart")}); err != nil {
			return err
		}
		if err := env.WaitDone(ctx, "self-heal"); err != nil {
			return err
		}
		if err := env.Learner.Delete(ctx, &dbv1.Database{ObjectMeta: meta("billing")}); err != nil {
			return err
		}
		if err := env.Learner.Delete(ctx, &appsv1.StatefulSet{ObjectMeta: meta("billing-chart")}); err != nil {
			return err
		}
		if err := env.WaitDone(ctx, "uninstalled"); err != nil {
			return err
		}
		// The front end and the dashboards need no operator: picking them
		// is wrong, and nothing turns done.
		wrong, err := env.Answer("decide", []int{1, 2})
		if err != nil {
			return err
		}
		if wrong.Correct || !strings.Contains(wrong.Detail, "one of your picks is wrong, and one right choice is missing") {
			return fmt.Errorf("answer 1,2 = %+v; want wrong, one wrong pick and one missing", wrong)
		}
		right, err := env.Answer("decide", []int{1, 3})
		if err != nil {
			return err
		}
		if !right.Correct || !strings.Contains(right.Detail, "day-2") {
			return fmt.Errorf("answer 1,3 = %+v; want right, with the explanation", right)
		}
		return nil
	})
}
