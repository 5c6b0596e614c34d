package labns_test

import (
	"strings"
	"testing"

	"github.com/oplab-dev/oplab/controller/labns"
)

func TestValidatePrefix(t *testing.T) {
	for _, p := range []string{"lab-", "a-", "class-2026-", "team-b-", strings.Repeat("a", 54) + "-"} {
		if err := labns.ValidatePrefix(p); err != nil {
			t.Errorf("ValidatePrefix(%q) = %v; want it accepted", p, err)
		}
	}
	for _, p := range []string{"", "lab", "Lab-", "-lab-", "1lab-", "lab--", "la_b-", "lab.x-", "lab -", "läb-", strings.Repeat("a", 55) + "-"} {
		err := labns.ValidatePrefix(p)
		if err == nil || !strings.Contains(err.Error(), "--namespace-prefix") || !strings.Contains(err.Error(), `"`+p+`"`) {
			t.Errorf("ValidatePrefix(%q) = %v; want an error naming --namespace-prefix and the value", p, err)
		}
	}
	if got := labns.Instance("team-b-"); got != "team-b" {
		t.Errorf("Instance(team-b-) = %q; want team-b", got)
	}
}
