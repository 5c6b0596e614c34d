package judge

import (
	"context"
	"strings"
	"testing"
)

// The test's verdict decides the task: none since Start, a failed one
// (naming its first finding) and a passed one.
func TestTheTestedTaskReadsTheVerdict(t *testing.T) {
	for _, c := range []struct {
		tested *Tested
		done   bool
		words  string
	}{
		{nil, false, "press Test my code"},
		{&Tested{Schedules: 1, Findings: []string{"budget: a reconcile still made 1 write"}}, false, "The first: budget: a reconcile still made 1 write."},
		{&Tested{Passed: true, Schedules: 52}, true, "every one of the tester's 52 schedules"},
	} {
		r, err := checkTested(context.Background(), Env{Tested: c.tested})
		if err != nil || r.Done != c.done || !strings.Contains(r.Detail, c.words) {
			t.Errorf("verdict %+v: done %v %q (%v); want done %v saying %q", c.tested, r.Done, r.Detail, err, c.done, c.words)
		}
	}
}
