package controller

// Condition types a Database reports. Ready is what users and tools such as
// `kubectl wait` and kstatus look at; Progressing and Degraded explain why it
// is not Ready yet.
const (
	// ConditionReady is True when every replica is ready and the endpoint
	// and secretName are published for the current generation.
	ConditionReady = "Ready"
	// ConditionProgressing is True while the controller is moving the
	// cluster towards the spec (creating, scaling, rolling out, deleting).
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when the last reconcile failed, or when a
	// Pod's container cannot start or keeps exiting; its message carries the
	// cause.
	ConditionDegraded = "Degraded"
)

// Condition reasons, CamelCase as metav1.Condition requires, kept in one
// place so the UI, lessons and tests agree on them.
const (
	// ReasonAvailable: Ready=True, every replica is ready.
	ReasonAvailable = "Available"
	// ReasonWaitingForReplicas: Ready=False / Progressing=True while the
	// StatefulSet has fewer ready replicas than the spec asks for.
	ReasonWaitingForReplicas = "WaitingForReplicas"
	// ReasonReconciled: Progressing=False, nothing left to do.
	ReasonReconciled = "Reconciled"
	// ReasonNoErrors: Degraded=False, the last reconcile succeeded.
	ReasonNoErrors = "NoErrors"
	// ReasonReconcileError: Degraded=True, the last reconcile failed.
	ReasonReconcileError = "ReconcileError"
	// ReasonNotObservedYet: Ready=Unknown, the controller could not observe the
	// StatefulSet yet (an error came first).
	ReasonNotObservedYet = "NotObservedYet"
	// ReasonDeleting: Ready=False once deletion has started.
	ReasonDeleting = "Deleting"
	// ReasonDrainingConnections: Progressing=True while the StatefulSet is
	// scaled to zero and its Pods terminate ("drop connections").
	ReasonDrainingConnections = "DrainingConnections"
	// ReasonTakingSnapshot: Progressing=True while the final snapshot is
	// written.
	ReasonTakingSnapshot = "TakingSnapshot"
	// ReasonContainerExited: Degraded=True while a container that exited
	// with an error runs again and is not ready yet (between two
	// CrashLoopBackOff waits).
	ReasonContainerExited = "ContainerExited"
)

// podFailureReasons are the kubelet's waiting reasons of a container that
// cannot start. Degraded takes them as its reason verbatim (they are
// CamelCase already), so the learner sees the word kubectl get pods shows.
// ContainerCreating and PodInitializing are absent: they are on the way.
var podFailureReasons = []string{
	"ErrImagePull", "ImagePullBackOff", "CrashLoopBackOff", "InvalidImageName",
	"CreateContainerConfigError", "CreateContainerError", "RunContainerError",
}
