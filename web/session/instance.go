package session

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// InstanceLabel names the oplab instance a lab namespace belongs to: its
// namespace prefix without the dash ("lab" for lab-). Several oplab
// classrooms can share one cluster, each with its own prefix; every list
// selects on this label, so one instance's idle cleanup and reclaim never
// see, let alone delete, another's namespaces. (Names alone cannot tell
// them apart: lab-x-… also starts with lab-.)
const InstanceLabel = "oplab.dev/instance"

// randomSuffixLen is the length of the random part of a namespace name
// (five random bytes in base32).
const randomSuffixLen = 8

// maxPrefixLen keeps prefix + random part within a namespace name's 63
// characters.
const maxPrefixLen = 63 - randomSuffixLen

var prefixPattern = regexp.MustCompile(`^[a-z]([a-z0-9-]*[a-z0-9])?-$`)

// ValidatePrefix reports whether prefix can start lab namespace names: a
// DNS label's start (lowercase letters, digits and dashes, beginning with a
// letter) ending in one dash, short enough for the random part to follow.
// The error names the --namespace-prefix flag, where the value comes from.
func ValidatePrefix(prefix string) error {
	if len(prefix) > maxPrefixLen {
		return fmt.Errorf("invalid --namespace-prefix %q: %d characters, at most %d (the namespace name adds %d and must fit in 63)", prefix, len(prefix), maxPrefixLen, randomSuffixLen)
	}
	if !prefixPattern.MatchString(prefix) {
		return fmt.Errorf("invalid --namespace-prefix %q: want lowercase letters, digits and dashes, starting with a letter and ending in one dash after a letter or digit, like %q", prefix, NamespacePrefix)
	}
	return nil
}

// Instance returns the InstanceLabel value of the namespaces made with
// prefix.
func Instance(prefix string) string { return strings.TrimSuffix(prefix, "-") }

// prefix is n's namespace prefix, NamespacePrefix unless set.
func (n KubeNamespaces) prefix() string {
	if n.Prefix == "" {
		return NamespacePrefix
	}
	return n.Prefix
}

// labels are the labels of the lab namespaces n creates.
func (n KubeNamespaces) labels() map[string]string {
	return map[string]string{LabLabel: "true", InstanceLabel: Instance(n.prefix())}
}

// ours reports whether a namespace found in the cluster is one of n's:
// labelled with n's instance and named with n's prefix.
func (n KubeNamespaces) ours(ns *corev1.Namespace) bool {
	return ns.Labels[LabLabel] == "true" && ns.Labels[InstanceLabel] == Instance(n.prefix()) &&
		strings.HasPrefix(ns.Name, n.prefix())
}

// deleteOurs deletes the namespace if it is one of n's, and refuses
// otherwise: a name passed in by mistake (or by a second oplab sharing the
// cluster) never deletes another instance's learner. The delete carries the
// UID it checked, so a namespace recreated meanwhile by someone else is not
// deleted either.
func (n KubeNamespaces) deleteOurs(ctx context.Context, name string) error {
	var ns corev1.Namespace
	if err := n.Client.Get(ctx, client.ObjectKey{Name: name}, &ns); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !n.ours(&ns) {
		return fmt.Errorf("refusing to delete namespace %s: it is not a lab namespace of this oplab (labels %s=%q, %s=%q; this oplab's are %q, %q, prefix %q)",
			name, LabLabel, ns.Labels[LabLabel], InstanceLabel, ns.Labels[InstanceLabel], "true", Instance(n.prefix()), n.prefix())
	}
	if ns.DeletionTimestamp != nil {
		return nil
	}
	err := n.Client.Delete(ctx, &ns, client.Preconditions{UID: &ns.UID})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone, or replaced by a namespace this check did not see: either
		// way not ours to delete now.
		return nil
	}
	return err
}
