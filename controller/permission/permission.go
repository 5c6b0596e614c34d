// Package permission words the API server's refusals of oplab's own
// requests, so that whoever sees one (a learner's flash message, the
// timeline, a Database's condition, the log, /readyz) reads which
// permission oplab lacks and what to do about it, instead of the API
// server's sentence about a ServiceAccount they never heard of.
//
// Only refusals by the authorizer (RBAC) and by RBAC's escalation check
// are reworded; every other Forbidden (an exceeded quota, PodSecurity, a
// terminating namespace) means something else and is left as it is.
package permission

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// CodeServiceAccount is the ServiceAccount a learner's own reconciler acts
// as in its lab namespace (controller.GrantCode). The API server's refusals
// of it are the learner's to read, about their code, not a permission
// oplab lacks: Explain leaves them as they are.
const CodeServiceAccount = "oplab-code"

// codeUserRe finds a refusal of the learner code's ServiceAccount, in any
// namespace: the authorizer's message names the user it refused.
var codeUserRe = regexp.MustCompile(`User "system:serviceaccount:[^":]+:` + CodeServiceAccount + `"`)

// Where the fix is: the install manifests' roles.
const rolesHint = "ask your cluster admin to grant it (see controller/config/rbac)"

// Rule is one refused permission: verbs on a resource ("pods/log" for a
// subresource) of an API group ("" is the core group).
type Rule struct {
	Verbs    []string
	Group    string
	Resource string
}

func (r Rule) String() string {
	verbs := make([]string, len(r.Verbs))
	for i, v := range r.Verbs {
		verbs[i] = fmt.Sprintf("%q", v)
	}
	group := r.Group
	if group == "" {
		group = "core"
	}
	return fmt.Sprintf("%s %q (%s)", strings.Join(verbs, ", "), r.Resource, group)
}

// Error is a refused permission of oplab's, in words. It wraps the API
// server's error, so apierrors.IsForbidden still holds.
type Error struct {
	// Missing is what oplab lacks: one rule for a refused request, one or
	// more when RBAC refused a Role granting what oplab does not hold.
	Missing []Rule
	// Namespace is where; empty means cluster-wide (and, for Grant, not
	// said: the API server's message does not name the Role's namespace).
	Namespace string
	// Grant is set when oplab was refused writing a Role that grants
	// Missing (a learner's): Kubernetes lets nobody grant more than they
	// hold.
	Grant bool
	Err   error
}

func (e *Error) Error() string {
	rules := make([]string, len(e.Missing))
	for i, r := range e.Missing {
		rules[i] = r.String()
	}
	what := strings.Join(rules, " and ")
	where := "cluster-wide"
	switch {
	case len(e.Missing) == 1 && e.Missing[0].Resource == "namespaces" && e.Namespace != "":
		// A request on a namespace itself carries its name as the namespace.
		where = "on namespace " + e.Namespace
	case e.Namespace != "":
		where = "in namespace " + e.Namespace
	}
	if e.Grant {
		return fmt.Sprintf("oplab may not grant %s in a Role, because it does not hold that itself: %s", what, rolesHint)
	}
	return fmt.Sprintf("oplab may not %s %s: %s", what, where, rolesHint)
}

func (e *Error) Unwrap() error { return e.Err }

// The authorizer's sentence (k8s.io/apiserver's forbiddenMessage) and the
// escalation check's list of rules (rbacv1helpers.CompactString).
var (
	refusedRe  = regexp.MustCompile(`cannot (\S+) resource "([^"]*)" in API group "([^"]*)"(?: in the namespace "([^"]*)"| at the cluster scope)`)
	escalateRe = regexp.MustCompile(`is attempting to grant RBAC permissions not currently held:\n`)
	heldRuleRe = regexp.MustCompile(`\{APIGroups:\[([^\]]*)\], Resources:\[([^\]]*)\](?:, ResourceNames:\[[^\]]*\])?, Verbs:\[([^\]]*)\]\}`)
	quotedRe   = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)
)

// Explain returns err in words when it is, or wraps, the API server
// refusing oplab a permission; any other error, nil included, comes back
// as it is. The result's message replaces err's whole message: callers add
// their own context ("could not make your kubeconfig: …").
func Explain(err error) error {
	var status apierrors.APIStatus
	if err == nil || Explained(err) || !apierrors.IsForbidden(err) || !errors.As(err, &status) {
		return err
	}
	msg := status.Status().Message
	if codeUserRe.MatchString(msg) {
		return err
	}
	if m := refusedRe.FindStringSubmatch(msg); m != nil {
		return &Error{Missing: []Rule{{Verbs: []string{m[1]}, Resource: m[2], Group: m[3]}}, Namespace: m[4], Err: err}
	}
	if loc := escalateRe.FindStringIndex(msg); loc != nil {
		e := &Error{Grant: true, Err: err}
		for _, m := range heldRuleRe.FindAllStringSubmatch(msg[loc[1]:], -1) {
			verbs := unquote(m[3])
			for _, g := range unquoteOrCore(m[1]) {
				for _, r := range unquote(m[2]) {
					e.Missing = append(e.Missing, Rule{Verbs: verbs, Group: g, Resource: r})
				}
			}
		}
		if len(e.Missing) > 0 {
			return e
		}
	}
	return err
}

// Explained reports whether err carries a refused permission in words.
func Explained(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

func unquote(list string) []string {
	var out []string
	for _, m := range quotedRe.FindAllStringSubmatch(list, -1) {
		out = append(out, m[1])
	}
	return out
}

// unquoteOrCore is unquote for API groups, where the core group is "".
func unquoteOrCore(list string) []string {
	if out := unquote(list); len(out) > 0 {
		return out
	}
	return []string{""}
}
