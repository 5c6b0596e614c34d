package labns

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
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

// labels select the lab namespaces of n's instance.
func (n KubeNamespaces) labels() map[string]string {
	return map[string]string{LabLabel: "true", InstanceLabel: Instance(n.prefix())}
}

// Pod Security labels of every lab namespace: the "restricted" level,
// enforced, so a learner's kubectl cannot run a privileged, host-sharing
// or root Pod there (the Database's own Pods comply), and audited and
// warned at, each at the "latest" version of the policy, so that no label
// pins an older, looser meaning of "restricted" (at enforce-version=v1.0 it
// checks neither privilege escalation, seccomp nor capabilities, all added
// since). The admission policy of
// controller/config/manager/instance_policy.yaml refuses oplab a namespace
// without all six.
const (
	PodSecurityEnforce        = "pod-security.kubernetes.io/enforce"
	PodSecurityEnforceVersion = "pod-security.kubernetes.io/enforce-version"
	PodSecurityWarn           = "pod-security.kubernetes.io/warn"
	PodSecurityWarnVersion    = "pod-security.kubernetes.io/warn-version"
	PodSecurityAudit          = "pod-security.kubernetes.io/audit"
	PodSecurityAuditVersion   = "pod-security.kubernetes.io/audit-version"
	PodSecurityLevel          = "restricted"
	PodSecurityVersion        = "latest"
)

// PodSecurityLabels are the Pod Security labels every lab namespace
// carries.
func PodSecurityLabels() map[string]string {
	return map[string]string{
		PodSecurityEnforce: PodSecurityLevel, PodSecurityEnforceVersion: PodSecurityVersion,
		PodSecurityWarn: PodSecurityLevel, PodSecurityWarnVersion: PodSecurityVersion,
		PodSecurityAudit: PodSecurityLevel, PodSecurityAuditVersion: PodSecurityVersion,
	}
}

// newLabels are the labels of a lab namespace n creates: its instance's
// and Pod Security's.
func (n KubeNamespaces) newLabels() map[string]string {
	l := n.labels()
	maps.Copy(l, PodSecurityLabels())
	return l
}

// ours reports whether a namespace found in the cluster is one of n's:
// labelled with n's instance and named with n's prefix.
func (n KubeNamespaces) ours(ns *corev1.Namespace) bool {
	return ns.Labels[LabLabel] == "true" && ns.Labels[InstanceLabel] == Instance(n.prefix()) &&
		strings.HasPrefix(ns.Name, n.prefix())
}

// unlabelledName is the name an oplab from before instance labels gave
// its namespaces: the default prefix and eight base32 characters, never a
// dash among them (so never a name of another prefix such as lab-x-).
var unlabelledName = regexp.MustCompile(`^` + NamespacePrefix + `[a-z2-7]{8}$`)

// adoptUnlabelled labels, with the default instance, the lab namespaces an
// oplab from before instance labels made, and returns them: without this,
// an upgrade would lose those learners' sessions, and no reclaim would ever
// see their namespaces again. Only the default prefix adopts, and only
// names that oplab could have made.
func (n KubeNamespaces) adoptUnlabelled(ctx context.Context) ([]corev1.Namespace, error) {
	if n.prefix() != NamespacePrefix {
		return nil, nil
	}
	sel, err := labels.Parse(LabLabel + "=true,!" + InstanceLabel)
	if err != nil {
		return nil, fmt.Errorf("parse selector: %w", err)
	}
	var list corev1.NamespaceList
	if err := n.Client.List(ctx, &list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	var adopted []corev1.Namespace
	for _, ns := range list.Items {
		if ns.DeletionTimestamp != nil || !unlabelledName.MatchString(ns.Name) {
			continue
		}
		// The instance label goes on with the Pod Security ones: oplab's
		// admission policy refuses it a lab namespace without them.
		if err := n.upgrade(ctx, &ns); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("label namespace %s with its instance: %w", ns.Name, err)
		}
		adopted = append(adopted, ns)
	}
	return adopted, nil
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
