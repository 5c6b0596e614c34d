// Package controller is oplab's Database operator: the controller learners
// watch at work.
//
// # What it does
//
// A Database (db.oplab.dev/v1alpha1, see api/v1alpha1) becomes three
// children, each with a controller ownerReference (blockOwnerDeletion):
//
//   - a Secret <name>-credentials with generated credentials, created once
//     and never regenerated;
//   - a headless Service <name> (port 5432 for postgres, 3306 for mysql);
//     the Database's endpoint is <name>.<namespace>.svc:<port>;
//   - a StatefulSet <name> running postgres:<version> or mysql:<version>.
//
// The data volume is an emptyDir sized from spec.storage, not a
// PersistentVolumeClaim: the embedded cluster has no storage provisioner, so
// a claim would stay Pending forever. (kwok fakes the kubelet, so the images
// are never pulled either.)
//
// # The loop
//
// DatabaseReconciler.Reconcile (database_controller.go) is level-triggered
// and idempotent: fetch (gone → done); deletion → the finalizer
// (database_finalizer.go); ensure the finalizer; create or correct each
// child (ensureSecret, ensureService, ensureStatefulSet in children.go),
// reading it from the informer cache and comparing only the fields the
// controller manages (AlreadyExists is convergence); compute the status in
// memory and write it once, only when it changed (database_status.go).
// Errors requeue with the work queue's exponential backoff and set
// Degraded; success schedules a periodic resync (Options.ResyncPeriod, 30 s
// by default), sooner while the Database still waits for its replicas
// (after 2 s, then less and less often). A child that exists without an
// owner (made before its Database) is adopted; one another controller owns
// is an error. SetupWithManager is the wiring in the kubebuilder book's
// shape: For the Database, Owns its three children.
//
// Deletion runs through the finalizer db.oplab.dev/final-snapshot: scale the
// StatefulSet to zero and wait until its Pods are gone ("drop connections"),
// write the ConfigMap <name>-final-snapshot (no ownerReference, so it
// outlives the Database), then remove the finalizer; the garbage collector
// deletes the children.
//
// If the controller is stopped when a Database is deleted, the Database hangs
// in Terminating. A restarted controller finishes the deletion properly. The
// escape hatch, at the cost of the snapshot, is
//
//	kubectl patch database NAME --type=merge -p '{"metadata":{"finalizers":null}}'
//
// # Tracing
//
// The reconciler is traced from outside, so its code stays the ordinary
// one; wiring.go puts the pieces around it. An event filter (triggers.go)
// records each watch event before it is queued; a wrapper opens each
// reconcile (reconcile.start, with its trigger) and closes it (result,
// with the next resync or the retry's backoff) (trace_reconcile.go); the
// reconciler's client and APIReader, wrapped with controller-runtime's
// client/interceptor, record what each call did (fetch, the diff of each
// child, action, finalizer phases, status; trace_client.go), working
// out a call's meaning from the Database the reconcile fetched. The current reconcile's trace
// travels in its context.Context. Steps go to the Sink in Options
// (trace_step.go); Emit must never block. The package never imports web/.
//
// The reconciler reads its own writes to Databases (ownwrites.go): a reconcile
// that starts before the informer cache has caught up with the previous
// reconcile's write sees that write, so it neither repeats a status write
// nor finalizes a Database it has already let go.
//
// # Pausing a namespace
//
// Runner.PauseNamespace holds the reconciles of one namespace in the one
// shared controller (pause.go): its watch events are still traced, marked
// held, but filtered out of the queue, and a resync or retry that comes
// due is put aside; ResumeNamespace reconciles every Database in it and
// every one held.
//
// # Pitfalls
//
// The annotation db.oplab.dev/pitfall on one Database switches on a
// deliberate bug for that Database only. Each pitfall is a variation of the
// reconciler, all of them in pitfalls.go, picked per Database by a wrapper
// around it; none of them is in the reconciler's files. A second
// annotation, db.oplab.dev/pitfall-hidden, keeps the pitfall's name (and
// whether one is on) off the trace while it still runs, for a challenge
// whose exercise is to tell it from the behaviour.
//
// # Lessons
//
// Code regions between "// lesson:begin NAME" and "// lesson:end NAME"
// comments are pulled into the lessons at build time: reconcile-loop,
// controller-wiring and already-exists (database_controller.go), finalizer
// (database_finalizer.go), status-write (database_status.go). Source embeds
// those three files and no other.
package controller
