// Package labns makes, finds and deletes the lab namespaces in the
// cluster: a learner's namespace with its Database quota, LimitRange, Pod
// Security labels and oplab's own RoleBindings there (KubeNamespaces, the
// cluster side of a session.Manager); the instance labels that keep
// several oplabs sharing a cluster apart (ValidatePrefix, Instance); and
// the way out of a namespace held Terminating by finalizers no one will
// remove (ClearFinalizers); and a learner's own kubectl access to their
// namespace (Issuer: a ServiceAccount, Role and RoleBinding there, and a
// kubeconfig). Which browser owns which namespace is web/session's
// business; this package knows only the cluster, and imports nothing of
// the web.
package labns

import "time"

// NamespacePrefix starts every lab namespace's name unless
// session.Options.NamespacePrefix (and KubeNamespaces.Prefix) say otherwise.
const NamespacePrefix = "lab-"

// LabLabel marks the namespaces this package creates, so that leftovers can
// be found by label.
const LabLabel = "oplab.dev/lab"

// ScratchOfLabel marks a scratch namespace, one the tester of a learner's
// code runs a schedule in, with the learner's own namespace.
const ScratchOfLabel = "oplab.dev/scratch-of"

// CookieHashAnnotation is the annotation on a lab namespace holding the
// hex SHA-256 of its session's cookie: enough to recognise the cookie after
// a restart, useless to anyone reading the namespace.
const CookieHashAnnotation = "oplab.dev/session-sha256"

// ActedAnnotation marks a lab namespace whose session has come back at
// least once, so a restart keeps giving it the long idle timeout.
const ActedAnnotation = "oplab.dev/session-acted"

// LearnerAnnotation holds, as JSON, what the session table keeps of the
// namespace's learner (session.Saved): their name, progress, what the
// server saw of their work, when last seen. The learner's kubectl cannot
// write a namespace, so they cannot write it either.
const LearnerAnnotation = "oplab.dev/learner"

// Namespace is a lab namespace found in the cluster.
type Namespace struct {
	Name    string
	Created time.Time
	// CookieHash is the session's cookie hash (CookieHashAnnotation); empty
	// for a namespace an older oplab made.
	CookieHash string
	// Acted is whether its session ever came back (ActedAnnotation).
	Acted bool
	// Learner is the LearnerAnnotation's JSON; nil when none.
	Learner []byte
}
