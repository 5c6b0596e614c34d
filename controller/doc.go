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
// Reconcile (database_controller.go) is level-triggered and idempotent:
// fetch (gone → done); deletion → the finalizer (database_finalizer.go);
// ensure the finalizer; create or correct each child, reading it from the
// informer cache and comparing only the fields the controller manages
// (AlreadyExists is convergence); compute the status in memory and write it
// once, only when it changed (database_status.go). Errors requeue with the
// work queue's exponential backoff and set Degraded; success schedules a
// periodic resync (Options.ResyncPeriod, 30 s by default), sooner while the
// Database still waits for its replicas (after 2 s, then less and less
// often). A child that exists without an owner (made before its Database)
// is adopted; one another controller owns is an error.
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
// one (tracing.go): the event handlers (events.go) record each watch event
// before it is queued; a wrapper opens each reconcile (reconcile.start, with
// its trigger) and closes it (result, with the next resync or the retry's
// backoff); the reconciler's client, wrapped with controller-runtime's
// client/interceptor, records what each API call did (fetch, action,
// finalizer, status). The current reconcile's trace travels in its
// context.Context; the reconciler reports only what no API call shows (a
// diff, a drain) through note. Steps go to the Sink in Options (trace.go);
// Emit must never block. The package never imports web/.
//
// The reconciler reads its own writes to Databases (fresh.go): a reconcile
// that starts before the informer cache has caught up with the previous
// reconcile's write sees that write, so it neither repeats a status write
// nor finalizes a Database it has already let go.
//
// # Pausing a namespace
//
// Runner.PauseNamespace holds the reconciles of one namespace in the one
// shared controller (pause.go): its watch events are still traced, marked
// held, but not queued; ResumeNamespace reconciles every Database in it.
//
// # Pitfalls
//
// The annotation db.oplab.dev/pitfall on one Database switches on a
// deliberate bug for that Database only. Each pitfall is a variation of the
// reconciler, all of them in pitfalls.go, none of them in the code the
// lessons show. A second annotation, db.oplab.dev/pitfall-hidden, keeps the
// pitfall's name (and whether one is on) off the trace while it still runs,
// for a challenge whose exercise is to tell it from the behaviour.
//
// # Lessons
//
// Code regions between "// lesson:begin NAME" and "// lesson:end NAME"
// comments are pulled into the lessons at build time: reconcile-loop and
// already-exists (database_controller.go), finalizer (database_finalizer.go),
// status-write (database_status.go).
package controller
