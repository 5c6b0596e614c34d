package judge

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/oplab-dev/oplab/controller"
)

// The input kinds the challenge files name. Each computes its truth from
// the namespace as it is when the answer is sent (status, Secrets,
// ConfigMaps) or from the controller's trace since the challenge's Start,
// so an answer is right because the learner found what exists.
func init() {
	RegisterInput("endpoint", Input{
		Label: "Endpoint", Shape: "a host:port, as status.endpoint says it", MaxLen: 253,
		Pattern: regexp.MustCompile(`^[A-Za-z0-9.-]+:[0-9]{1,5}$`),
		Judge:   judgeEndpoint,
	})
	RegisterInput("secret-name", Input{
		Label: "Secret name", Shape: "a Kubernetes object name (lowercase letters, digits, dots and dashes)", MaxLen: 253,
		Pattern: objectName,
		Judge:   judgeSecretName,
	})
	RegisterInput("statefulset-creator", Input{
		Label: "Reconcile ID", Shape: reconcileIDShape, MaxLen: 37, Pattern: reconcileIDPattern,
		Judge: judgeStatefulSetCreator,
	})
	RegisterInput("ready-writer", Input{
		Label: "Reconcile ID", Shape: reconcileIDShape, MaxLen: 37, Pattern: reconcileIDPattern,
		Judge: judgeReadyWriter,
	})
	RegisterInput("drift-repair/repairer", Input{
		Label: "Reconcile ID", Shape: reconcileIDShape, MaxLen: 37, Pattern: reconcileIDPattern,
		Judge: judgeRepairer,
	})
	snapshotUID := Input{
		Label: "Database UID", Shape: "a UID, as in 0f8e2c1a-5b7d-4c3e-9a21-6d4b8e0f7c35", MaxLen: 36,
		Pattern: regexp.MustCompile(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`),
		Judge:   judgeSnapshotUID,
	}
	RegisterInput("snapshot-uid", snapshotUID)
	// The same answer where the challenge's own check must hold first: the
	// snapshot taken after the resume (died-mid-deletion), the children
	// gone with the owner (owner-gc).
	snapshotUID.Judge = gated(checkLedgerSnapshot, judgeSnapshotUID)
	RegisterInput("died-mid-deletion/snapshot-uid", snapshotUID)
	snapshotUID.Judge = gated(checkSnapshotOutlives, judgeSnapshotUID)
	RegisterInput("owner-gc/snapshot-uid", snapshotUID)
}

// gated judges an answer only once check is done; until then the answer is
// refused with what the check says is missing.
func gated(check Check, judge func(context.Context, Env, string) (Result, error)) func(context.Context, Env, string) (Result, error) {
	return func(ctx context.Context, env Env, answer string) (Result, error) {
		r, err := check(ctx, env)
		if err != nil || !r.Done {
			return Result{Detail: "Not yet: " + r.Detail}, err
		}
		return judge(ctx, env, answer)
	}
}

// objectName is a DNS subdomain, the shape of most object names.
var objectName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// A reconcile ID is controller-runtime's UUID; the timeline row shows its
// first eight characters after "#", and the learner may type those or
// more, with or without the "#".
const reconcileIDShape = "a reconcile ID: the 8 characters after # on its timeline row, as in #3f9a1c2e"

var reconcileIDPattern = regexp.MustCompile(`^#?[0-9A-Fa-f][0-9A-Fa-f-]{7,35}$`)

// matchesID reports whether typed (a reconcile ID or its start, "#"
// allowed) names the reconcile id.
func matchesID(typed, id string) bool {
	t := strings.ToLower(strings.TrimPrefix(typed, "#"))
	return len(t) >= 8 && id != "" && strings.HasPrefix(strings.ToLower(id), t)
}

// reconcileOf returns the trace's steps of the reconcile typed names, nil
// when no reconcile since the start has that ID.
func reconcileOf(env Env, typed string) []controller.Step {
	var out []controller.Step
	for _, s := range env.Trace {
		if matchesID(typed, s.ReconcileID) {
			out = append(out, s)
		}
	}
	return out
}

// noSuchReconcile is the detail for an ID the trace does not hold.
func noSuchReconcile(typed string) string {
	return fmt.Sprintf("No reconcile since your Start has an ID starting %s. On the lab's timeline each reconcile's row ends with # and the first 8 characters of its ID: copy those.", strings.TrimPrefix(typed, "#"))
}

// whatItDid says in words what a reconcile the learner named did ("what it
// did: finalizer added"), so a wrong ID teaches what that reconcile was.
func whatItDid(steps []controller.Step) string {
	var did []string
	for _, s := range steps {
		switch {
		case s.Type == controller.StepAction && s.Target != nil:
			did = append(did, fmt.Sprintf("%s %s %s (%s)", s.Action, s.Target.Kind, s.Target.Name, s.Outcome))
		case s.Type == controller.StepStatus && !s.Skipped && s.Error == "":
			did = append(did, "wrote status, "+describeConditions(s.Conditions))
		case s.Type == controller.StepFinalizer:
			did = append(did, "finalizer "+s.Phase)
		}
	}
	if len(did) == 0 {
		return "it changed nothing"
	}
	return "what it did: " + strings.Join(did, "; ")
}

func judgeEndpoint(ctx context.Context, env Env, answer string) (Result, error) {
	dbs, err := env.Databases(ctx)
	if err != nil {
		return Result{}, err
	}
	published := 0
	for i := range dbs {
		db := &dbs[i]
		if db.Status.Endpoint == "" {
			continue
		}
		published++
		if strings.EqualFold(db.Status.Endpoint, answer) {
			return Result{Done: true, Detail: fmt.Sprintf("Right: Database %s publishes %s in status.endpoint, the Service %s's DNS name and the engine's port. A client reads it there and never needs to know how the controller built it.", db.Name, db.Status.Endpoint, db.Name)}, nil
		}
	}
	if published == 0 {
		return Result{Detail: "No Database in " + env.Namespace + " has published status.endpoint yet: wait until it is Ready, then read its status."}, nil
	}
	return Result{Detail: fmt.Sprintf("No Database in %s publishes %q. Read status.endpoint of your Database itself (the lab's card or kubectl's jsonpath in the hint), not a name you build from the Service.", env.Namespace, answer)}, nil
}

func judgeSecretName(ctx context.Context, env Env, answer string) (Result, error) {
	dbs, err := env.Databases(ctx)
	if err != nil {
		return Result{}, err
	}
	named := 0
	for i := range dbs {
		db := &dbs[i]
		if db.Status.SecretName == "" {
			continue
		}
		named++
		if db.Status.SecretName != answer {
			continue
		}
		var s corev1.Secret
		found, err := env.Get(ctx, answer, &s)
		if err != nil {
			return Result{}, err
		}
		if !found {
			return Result{Detail: fmt.Sprintf("Database %s names Secret %s in status.secretName, but no such Secret exists: look at the Database's conditions.", db.Name, answer)}, nil
		}
		owned := "it carries an ownerReference to the Database, so it goes when the Database goes"
		if !Controls(db, &s) {
			owned = "it carries no ownerReference to the Database"
		}
		return Result{Done: true, Detail: fmt.Sprintf("Right: status.secretName of Database %s names Secret %s, which the controller created with the credentials; %s.", db.Name, s.Name, owned)}, nil
	}
	if named == 0 {
		return Result{Detail: "No Database in " + env.Namespace + " names a Secret in status yet: wait until it is Ready, then read its status."}, nil
	}
	return Result{Detail: fmt.Sprintf("No Database in %s names %q in status.secretName. Read the status of your Database, not the list of Secrets.", env.Namespace, answer)}, nil
}

// judgeStatefulSetCreator: the reconcile that created a StatefulSet, the
// last to create one of its name (a namesake created before and deleted is
// not the StatefulSet there now).
func judgeStatefulSetCreator(_ context.Context, env Env, answer string) (Result, error) {
	latest := map[string]controller.Step{} // StatefulSet name → its last create
	for _, s := range env.Trace {
		if s.Type == controller.StepAction && s.Action == "create" && s.Target != nil && s.Target.Kind == "StatefulSet" && s.Outcome == controller.OutcomeCreated {
			latest[s.Target.Name] = s
		}
	}
	if len(latest) == 0 {
		return Result{Detail: "No reconcile has created a StatefulSet since your Start: create a Database first."}, nil
	}
	for _, s := range latest {
		if matchesID(answer, s.ReconcileID) {
			return Result{Done: true, Detail: fmt.Sprintf("Right: reconcile #%s of Database %s created StatefulSet %s. The StatefulSet's ownerReference points back at the Database with controller: true, so the Database's Owns watch hears of every change to it.", shortID(s.ReconcileID), s.Database, s.Target.Name)}, nil
		}
	}
	steps := reconcileOf(env, answer)
	if len(steps) == 0 {
		return Result{Detail: noSuchReconcile(answer)}, nil
	}
	return Result{Detail: fmt.Sprintf("Reconcile #%s did not create the StatefulSet; %s. Look for the row with “create StatefulSet”.", shortID(steps[0].ReconcileID), whatItDid(steps))}, nil
}

// judgeReadyWriter: a reconcile whose status write turned Ready True.
func judgeReadyWriter(_ context.Context, env Env, answer string) (Result, error) {
	var writers []controller.Step
	for _, s := range env.Trace {
		if s.Type == controller.StepStatus && !s.Skipped && s.Error == "" && slices.ContainsFunc(s.Conditions, func(c controller.ConditionChange) bool {
			return c.Type == controller.ConditionReady && c.To == "True" && c.From != "True"
		}) {
			writers = append(writers, s)
		}
	}
	if len(writers) == 0 {
		return Result{Detail: "No reconcile has written Ready True since your Start yet: wait until the card says Ready."}, nil
	}
	for _, s := range writers {
		if matchesID(answer, s.ReconcileID) {
			return Result{Done: true, Detail: fmt.Sprintf("Right: reconcile #%s saw the StatefulSet's replicas ready and wrote %s, with observedGeneration %d: the status now describes generation %d of the spec.", shortID(s.ReconcileID), describeConditions(s.Conditions), s.ObservedGeneration, s.ObservedGeneration)}, nil
		}
	}
	steps := reconcileOf(env, answer)
	if len(steps) == 0 {
		return Result{Detail: noSuchReconcile(answer)}, nil
	}
	return Result{Detail: fmt.Sprintf("Reconcile #%s did not turn Ready True; %s. Look for the status write whose Ready goes to True.", shortID(steps[0].ReconcileID), whatItDid(steps))}, nil
}

// judgeRepairer: drift-repair's reconcile that put shop's StatefulSet back,
// judged as the repaired-once check judges it, so the right ID is also a
// reconcile that changed nothing else.
func judgeRepairer(ctx context.Context, env Env, answer string) (Result, error) {
	r, err := checkShopRepairedOnce(ctx, env)
	if err != nil || !r.Done {
		return Result{Detail: "Not yet: " + r.Detail}, err
	}
	acting, _ := repairRuns(stepLog(env.Trace))
	if matchesID(answer, acting[0].ID) {
		return Result{Done: true, Detail: "Right. " + r.Detail}, nil
	}
	steps := reconcileOf(env, answer)
	if len(steps) == 0 {
		return Result{Detail: noSuchReconcile(answer)}, nil
	}
	for _, s := range steps {
		if isStatefulSetCreate(s) {
			return Result{Detail: fmt.Sprintf("Reconcile #%s created StatefulSet %s before you deleted it: look below your delete on the timeline.", shortID(s.ReconcileID), shop)}, nil
		}
	}
	return Result{Detail: fmt.Sprintf("Reconcile #%s did not put the StatefulSet back; %s. Look for the first reconcile after your delete that creates StatefulSet %s.", shortID(steps[0].ReconcileID), whatItDid(steps), shop)}, nil
}

// judgeSnapshotUID: the uid recorded in an ownerless final snapshot of a
// Database the trace shows deleted through its finalizer since the start.
// The snapshot is the only place left that names the deleted Database.
func judgeSnapshotUID(ctx context.Context, env Env, answer string) (Result, error) {
	names := finalizedNames(env)
	if len(names) == 0 {
		return Result{Detail: "No Database has been deleted through its finalizer since your Start yet."}, nil
	}
	seen := false
	for _, name := range names {
		var cm corev1.ConfigMap
		found, err := env.Get(ctx, controller.SnapshotName(name), &cm)
		if err != nil {
			return Result{}, err
		}
		if !found || len(cm.OwnerReferences) > 0 {
			continue
		}
		seen = true
		if strings.EqualFold(cm.Data["uid"], answer) {
			return Result{Done: true, Detail: fmt.Sprintf("Right: ConfigMap %s names Database %s by its uid %s and keeps its spec at generation %s, taken %s. It has no owner, so the garbage collector left it when the Database went.", cm.Name, name, cm.Data["uid"], cm.Data["generation"], cm.Data["time"])}, nil
		}
	}
	if !seen {
		return Result{Detail: fmt.Sprintf("No ownerless snapshot ConfigMap %s is there yet.", controller.SnapshotName(names[0]))}, nil
	}
	return Result{Detail: fmt.Sprintf("No final snapshot in %s records uid %s. Read the uid in the snapshot ConfigMap's data (kubectl get configmap NAME-final-snapshot -o yaml), not an object that exists now.", env.Namespace, answer)}, nil
}
