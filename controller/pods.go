package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// PodsAnnotation asks for realistic Pods: set on a Database to one of
// PodsModes, it is copied onto the StatefulSet's Pod template, where the
// embedded cluster's kwok stages (cluster/kwok-pod-stages.yaml) select the
// Pods by it and make them start slowly, fail to pull their image or crash
// in a loop. The fake node otherwise makes every Pod Ready at once, so
// Progressing, Degraded and the requeues would never show what they show on
// a real cluster. A real kubelet ignores the annotation.
const PodsAnnotation = "db.oplab.dev/pods"

// The modes PodsAnnotation can name.
const (
	PodsSlowStart      = "slow-start"
	PodsImagePullError = "image-pull-error"
	PodsCrashLoop      = "crash-loop"
)

// PodsModeInfo describes one mode for the lab's switch.
type PodsModeInfo struct {
	Name, Title, Description string
}

// PodsModes are the modes a learner can pick, in the lab's order.
var PodsModes = []PodsModeInfo{
	{
		Name:        PodsSlowStart,
		Title:       "Slow start",
		Description: "Each Pod runs at once but turns Ready only 15 seconds later, as an engine does while it starts.",
	},
	{
		Name:  PodsImagePullError,
		Title: "Image pull error",
		Description: "The image cannot be pulled, as with a version the registry does not have: the Pods stay Pending " +
			"in ErrImagePull and ImagePullBackOff.",
	},
	{
		Name:        PodsCrashLoop,
		Title:       "Crash loop",
		Description: "The container exits with status 1 two seconds after each start: CrashLoopBackOff, restarts counting up.",
	},
}

// PodsModeOf returns the mode PodsAnnotation asks of obj, or "" when none or
// when it names no known mode (ignored, as an unknown pitfall is, rather
// than breaking the Database; ValidatePodsMode reports it).
func PodsModeOf(obj client.Object) string {
	mode := obj.GetAnnotations()[PodsAnnotation]
	if ValidatePodsMode(mode) != nil {
		return ""
	}
	return mode
}

// ValidatePodsMode returns an error naming the value when mode is neither
// empty nor a known mode. The web layer uses it to refuse bad input.
func ValidatePodsMode(mode string) error {
	if mode == "" || slices.ContainsFunc(PodsModes, func(m PodsModeInfo) bool { return m.Name == mode }) {
		return nil
	}
	names := make([]string, 0, len(PodsModes))
	for _, m := range PodsModes {
		names = append(names, m.Name)
	}
	return fmt.Errorf("unknown pods mode %q in annotation %s: want one of %s", mode, PodsAnnotation, strings.Join(names, ", "))
}

// podTemplateAnnotations are the annotations of the Database's Pod template:
// its pods mode when it asks for one, else none.
func podTemplateAnnotations(db *dbv1.Database) map[string]string {
	if mode := PodsModeOf(db); mode != "" {
		return map[string]string{PodsAnnotation: mode}
	}
	return nil
}

// templatePodsMode is the pods mode on a StatefulSet's Pod template.
func templatePodsMode(s *appsv1.StatefulSet) string {
	return s.Spec.Template.Annotations[PodsAnnotation]
}

// podReport is what the Database's Pods, and the StatefulSet's warnings,
// say about replicas that are late.
type podReport struct {
	// reason is the Degraded reason when a container cannot start or keeps
	// exiting: the kubelet's waiting reason (ErrImagePull, ImagePullBackOff,
	// CrashLoopBackOff…) or ReasonContainerExited; or, when a Pod could not
	// even be made, the StatefulSet's Warning Event's reason (FailedCreate).
	// "" when none fails.
	reason string
	// message names the Pod and container and says what the kubelet says,
	// or quotes the StatefulSet's Warning Event.
	message string
	// progress names the first Pod not ready yet and its phase, for
	// Progressing's message; "" when every Pod is ready or none was read.
	progress string
}

// databaseOfPod maps a Pod to the Database it is a replica of. The
// StatefulSet owns the Pods, not the Database, so Owns never sees them; the
// label the Database's Pod template gives every Pod names it.
func databaseOfPod(_ context.Context, pod client.Object) []reconcile.Request {
	name := pod.GetLabels()[LabelDatabase]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: pod.GetNamespace(), Name: name}}}
}

// databaseOfWarning maps a Warning Event about a StatefulSet to the
// Database of that name, which made it. When the StatefulSet controller
// cannot create a Pod (the namespace's quota refuses it), nothing about the
// StatefulSet changes but its Events: this is how the Database hears of it.
func databaseOfWarning(_ context.Context, obj client.Object) []reconcile.Request {
	e, ok := obj.(*corev1.Event)
	if !ok || !isStatefulSetWarning(e) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: e.Namespace, Name: e.InvolvedObject.Name}}}
}

func isStatefulSetWarning(e *corev1.Event) bool {
	return e.Type == corev1.EventTypeWarning && e.InvolvedObject.Kind == "StatefulSet"
}

// lookAtPods reads, from the cache the Pod and Event watches fill, what the
// Database's Pods say once its replicas are late: the StatefulSet counts
// ready replicas but never says why one is not. A container that cannot
// start or keeps exiting is reported at once, with the restart count the
// Pod has now; the first Pod that is merely not ready yet is named only
// once the Database has been progressing for progressPoll, so a Database
// that turns Ready at once costs no extra status write. When a replica
// has no Pod at all, the StatefulSet's latest Warning Event since the
// Database began progressing says why (a quota's refusal).
func (r *DatabaseReconciler) lookAtPods(ctx context.Context, db *dbv1.Database, sts *appsv1.StatefulSet) (podReport, error) {
	if sts == nil || statefulSetReady(sts, replicas(db)) {
		return podReport{}, nil
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(db.Namespace), client.MatchingLabels(selectorLabels(db))); err != nil {
		return podReport{}, fmt.Errorf("listing the Pods of %s: %w", db.Name, err)
	}
	report := reportPods(pods.Items)
	progressing := meta.FindStatusCondition(db.Status.Conditions, ConditionProgressing)
	late := progressing != nil && progressing.Status == metav1.ConditionTrue &&
		r.Clock.Now().Sub(progressing.LastTransitionTime.Time) >= progressPoll
	if !late {
		report.progress = ""
	}
	if report.reason != "" || sts.Status.Replicas >= replicas(db) || progressing == nil || progressing.Status != metav1.ConditionTrue {
		return report, nil
	}
	var events corev1.EventList
	if err := r.Client.List(ctx, &events, client.InNamespace(db.Namespace)); err != nil {
		return podReport{}, fmt.Errorf("listing the Events of StatefulSet %s: %w", sts.Name, err)
	}
	if e := latestWarning(events.Items, sts.Name, progressing.LastTransitionTime.Time); e != nil {
		report.reason = e.Reason
		report.message = fmt.Sprintf("StatefulSet %s: %s: %s", sts.Name, e.Reason, strings.TrimSuffix(e.Message, "."))
		if !strings.HasSuffix(report.message, ".") {
			report.message += "."
		}
	}
	return report, nil
}

// latestWarning is the newest Warning Event about StatefulSet name seen
// since since, nil when none.
func latestWarning(events []corev1.Event, name string, since time.Time) *corev1.Event {
	var latest *corev1.Event
	var at time.Time
	for i := range events {
		e := &events[i]
		if !isStatefulSetWarning(e) || e.InvolvedObject.Name != name || e.Reason == "" {
			continue
		}
		if t := eventTime(e); !t.Before(since) && (latest == nil || t.After(at)) {
			latest, at = e, t
		}
	}
	return latest
}

// eventTime is when e was last seen, whichever recorder wrote it: core/v1
// recorders set lastTimestamp, events.k8s.io/v1 ones a series or eventTime.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// reportPods finds, in Pod name order, the first container that cannot
// start or has exited, and says why.
func reportPods(pods []corev1.Pod) podReport {
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	var out podReport
	for _, p := range pods {
		if p.DeletionTimestamp != nil || podIsReady(&p) {
			continue
		}
		// A Pod still Pending on its way (scheduled, its container being
		// created) is not worth a word: under a burst of creates that
		// would cost each late Database a status write.
		if out.progress == "" && p.Status.Phase == corev1.PodRunning {
			out.progress = fmt.Sprintf("Pod %s is %s, not ready yet.", p.Name, p.Status.Phase)
		}
		for _, c := range p.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil && slices.Contains(podFailureReasons, w.Reason) {
				if out.progress == "" {
					out.progress = fmt.Sprintf("Pod %s is %s, not ready yet.", p.Name, p.Status.Phase)
				}
				out.reason = w.Reason
				out.message = fmt.Sprintf("Pod %s: container %s is waiting: %s: %s%s.",
					p.Name, c.Name, w.Reason, strings.TrimSuffix(w.Message, "."), restarts(c))
				return out
			}
			if t := c.LastTerminationState.Terminated; t != nil && !c.Ready && t.ExitCode != 0 {
				out.reason = ReasonContainerExited
				out.message = fmt.Sprintf("Pod %s: container %s exited with code %d (%s)%s; it runs again, not ready.",
					p.Name, c.Name, t.ExitCode, t.Reason, restarts(c))
				return out
			}
		}
	}
	return out
}

func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func restarts(c corev1.ContainerStatus) string {
	switch c.RestartCount {
	case 0:
		return ""
	case 1:
		return " (restarted once)"
	}
	return fmt.Sprintf(" (restarted %d times)", c.RestartCount)
}
