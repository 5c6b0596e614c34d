// Package starters holds the code a learner can start from on the code
// page: an empty skeleton, oplab's own reconciler written against the
// sandbox's client, and each pitfall as code to fix.
package starters

import (
	"embed"
	"strings"
)

//go:embed *.go.txt
var files embed.FS

// Starter is one starting point.
type Starter struct {
	ID    string
	Title string
}

// All lists the starting points, in the order the page offers them.
var All = []Starter{
	{"skeleton", "Empty skeleton"},
	{"oplab", "oplab's own reconciler"},
	{"pitfall-create", "Pitfall: non-idempotent create"},
	{"pitfall-status", "Pitfall: status thrash"},
	{"pitfall-finalizer", "Pitfall: missing finalizer"},
}

// Source is the code of starter id, or "" when there is none.
func Source(id string) string {
	if strings.ContainsAny(id, "/.") {
		return ""
	}
	b, err := files.ReadFile(id + ".go.txt")
	if err != nil {
		return ""
	}
	return string(b)
}
