package labns

// A learner's own access: each learner gets a kubeconfig that works only in
// their own lab namespace, so they can follow the lab with kubectl without
// holding the admin credentials of the person who started oplab.
//
// The identity is plain Kubernetes, the way a cluster admin would do it by
// hand: a ServiceAccount in the learner's namespace, a Role there granting
// what the lab teaches (their Databases and the children the lab shows),
// a RoleBinding between the two, and a token from the TokenRequest API that
// expires when the session would. Everything lives in the namespace, so it
// goes with it; nothing cluster-wide is ever created. The download route
// is web/kubeconfig's.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Names of what Grant creates in a learner's namespace.
const (
	LearnerServiceAccount = "learner"
	LearnerRole           = "oplab-learner"
	LearnerRoleBinding    = "oplab-learner"
)

// ManagedByLabel marks what Grant creates, so a person looking at the
// namespace can tell where it came from.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// MinTokenLife is the shortest token the TokenRequest API issues: a
// session with less time left still gets a token, valid for this long.
const MinTokenLife = 10 * time.Minute

// LearnerRules are what a learner's kubectl may do in their own namespace: what
// the lab itself lets them do, with the verbs that takes and no more. They
// may create, edit and delete their Databases, read their status, read
// every child the lab shows, and cause drift behind the controller's back
// (scale the StatefulSet through its scale subresource, delete it, the
// Service, a Pod or the final snapshot). Secrets are read only. They may
// patch a StatefulSet, because the owner-gc challenge has them remove its
// ownerReference; the admission policy oplab-learner-statefulsets
// (controller/config/policy/learner.yaml) refuses any change to its spec,
// so its Pod template (an image of their own, a host path) stays the
// controller's. Update, which replaces the whole object, is not granted.
// The namespace's Pod Security level and quota hold whatever Pods they
// still cause. oplab's own identity must hold these permissions too: the
// API server lets nobody grant more than they have.
var LearnerRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"db.oplab.dev"}, Resources: []string{"databases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	{APIGroups: []string{"db.oplab.dev"}, Resources: []string{"databases/status"}, Verbs: []string{"get"}},
	{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: []string{"get", "list", "watch", "patch", "delete"}},
	{APIGroups: []string{"apps"}, Resources: []string{"statefulsets/scale"}, Verbs: []string{"get", "patch", "update"}},
	{APIGroups: []string{""}, Resources: []string{"services", "configmaps", "pods"}, Verbs: []string{"get", "list", "watch", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
	{APIGroups: []string{""}, Resources: []string{"events", "resourcequotas"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"get", "list", "watch"}},
}

// Cluster is how a learner's kubectl reaches the API server.
type Cluster struct {
	// Server is the API server's URL as the learner can reach it.
	Server string
	// CAData is the PEM bundle that verifies the API server's certificate.
	CAData []byte
	// TLSServerName, when set, is the name the certificate is checked for.
	TLSServerName string
	// Insecure skips verifying the certificate; copied from the admin
	// config, never set otherwise.
	Insecure bool
}

// ClusterOf returns the API server of cfg (oplab's own admin config) as a
// learner reaches it: the same URL and CA the admin kubeconfig names, or
// server instead when set (an in-cluster oplab's host is not reachable from
// a learner's laptop).
func ClusterOf(cfg *rest.Config, server string) (Cluster, error) {
	c := Cluster{Server: cfg.Host, CAData: cfg.CAData, TLSServerName: cfg.ServerName, Insecure: cfg.Insecure}
	if server != "" {
		c.Server = server
	}
	if len(c.CAData) == 0 && cfg.CAFile != "" {
		data, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return Cluster{}, fmt.Errorf("read the API server's CA for learner kubeconfigs: %w", err)
		}
		c.CAData = data
	}
	if c.Server == "" {
		return Cluster{}, errors.New("learner kubeconfigs: no API server URL (set --kubeconfig-server)")
	}
	return c, nil
}

// Issuer grants learners their access and mints their kubeconfigs.
type Issuer struct {
	// Client is oplab's own client of the API server.
	Client kubernetes.Interface
	// Cluster is the API server the kubeconfigs name.
	Cluster Cluster
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Credentials is a learner's kubeconfig and when its token expires.
type Credentials struct {
	Kubeconfig []byte
	Expires    time.Time
}

func managed() map[string]string { return map[string]string{ManagedByLabel: "oplab"} }

// Grant makes sure ns holds the learner's ServiceAccount, Role and
// RoleBinding, as they are meant to be. It is idempotent, so it serves a
// session restored after a restart as well as a new one.
func (i *Issuer) Grant(ctx context.Context, ns string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: LearnerServiceAccount, Namespace: ns, Labels: managed()}}
	if _, err := i.Client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ServiceAccount %s/%s: %w", ns, LearnerServiceAccount, err)
	}
	if err := i.grantRole(ctx, ns); err != nil {
		return err
	}
	return i.bindRole(ctx, ns)
}

// grantRole creates the Role, or brings an existing one's rules up to date
// (an older oplab may have granted different ones).
func (i *Issuer) grantRole(ctx context.Context, ns string) error {
	roles := i.Client.RbacV1().Roles(ns)
	want := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: LearnerRole, Namespace: ns, Labels: managed()}, Rules: LearnerRules}
	_, err := roles.Create(ctx, want, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("create Role %s/%s: %w", ns, LearnerRole, err)
		}
		return nil
	}
	have, err := roles.Get(ctx, LearnerRole, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read Role %s/%s: %w", ns, LearnerRole, err)
	}
	if reflect.DeepEqual(have.Rules, LearnerRules) {
		return nil
	}
	have.Rules = LearnerRules
	if _, err := roles.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update Role %s/%s: %w", ns, LearnerRole, err)
	}
	return nil
}

// bindRole creates the RoleBinding, or repairs an existing one. Its
// roleRef cannot change, so a wrong one is deleted and made again.
func (i *Issuer) bindRole(ctx context.Context, ns string) error {
	bindings := i.Client.RbacV1().RoleBindings(ns)
	want := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: LearnerRoleBinding, Namespace: ns, Labels: managed()},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: LearnerRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: LearnerServiceAccount, Namespace: ns}},
	}
	_, err := bindings.Create(ctx, want, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("create RoleBinding %s/%s: %w", ns, LearnerRoleBinding, err)
		}
		return nil
	}
	have, err := bindings.Get(ctx, LearnerRoleBinding, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read RoleBinding %s/%s: %w", ns, LearnerRoleBinding, err)
	}
	if have.RoleRef == want.RoleRef && reflect.DeepEqual(have.Subjects, want.Subjects) {
		return nil
	}
	if err := bindings.Delete(ctx, LearnerRoleBinding, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("replace RoleBinding %s/%s: %w", ns, LearnerRoleBinding, err)
	}
	if _, err := bindings.Create(ctx, want, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create RoleBinding %s/%s: %w", ns, LearnerRoleBinding, err)
	}
	return nil
}

// Issue grants the learner of ns their access and returns a kubeconfig
// whose token expires at until (at least MinTokenLife from now; the API
// server may cap it shorter, and Credentials.Expires says what it gave).
func (i *Issuer) Issue(ctx context.Context, ns string, until time.Time) (Credentials, error) {
	if err := i.Grant(ctx, ns); err != nil {
		return Credentials{}, err
	}
	now := time.Now
	if i.Now != nil {
		now = i.Now
	}
	life := max(until.Sub(now()), MinTokenLife)
	secs := int64(math.Ceil(life.Seconds()))
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}
	tr, err := i.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, LearnerServiceAccount, req, metav1.CreateOptions{})
	if err != nil {
		return Credentials{}, fmt.Errorf("request a token for ServiceAccount %s/%s: %w", ns, LearnerServiceAccount, err)
	}
	expires := tr.Status.ExpirationTimestamp.Time
	data, err := clientcmd.Write(i.config(ns, tr.Status.Token))
	if err != nil {
		return Credentials{}, fmt.Errorf("encode kubeconfig: %w", err)
	}
	header := fmt.Sprintf("# oplab: kubectl for the lab namespace %s only.\n# The token expires at %s; download a fresh one from the lab then.\n",
		ns, expires.UTC().Format(time.RFC3339))
	return Credentials{Kubeconfig: append([]byte(header), data...), Expires: expires}, nil
}

// config is the kubeconfig of the learner of ns: one cluster, one user, one
// context whose default namespace is theirs, so plain `kubectl get
// databases` works.
func (i *Issuer) config(ns, token string) clientcmdapi.Config {
	name := "oplab-" + ns
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{
		Server: i.Cluster.Server, CertificateAuthorityData: i.Cluster.CAData,
		TLSServerName: i.Cluster.TLSServerName, InsecureSkipTLSVerify: i.Cluster.Insecure,
	}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: ns}
	kc.CurrentContext = name
	return *kc
}

// Revoke ends the learner's access to ns now: deleting the ServiceAccount
// makes the API server refuse its tokens (they are bound to it), before the
// namespace's deletion gets to it. Nothing there is fine.
func (i *Issuer) Revoke(ctx context.Context, ns string) error {
	err := i.Client.CoreV1().ServiceAccounts(ns).Delete(ctx, LearnerServiceAccount, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ServiceAccount %s/%s: %w", ns, LearnerServiceAccount, err)
	}
	err = i.Client.RbacV1().RoleBindings(ns).Delete(ctx, LearnerRoleBinding, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete RoleBinding %s/%s: %w", ns, LearnerRoleBinding, err)
	}
	return nil
}
