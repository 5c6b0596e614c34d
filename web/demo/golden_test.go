package demo

// This file is test data.

import (
	"time"

	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// goCoded are the demos as they were written in Go before they became data
// files (lessons/content/demos): the files must load to these same steps.
var goCoded = []Script{
	{
		ID:        "reconcile-loop",
		Title:     "The reconcile loop, start to finish",
		Summary:   "Create a Database, watch it become Ready, scale it, break it, delete it: one loop handles all of it.",
		Databases: []string{"shop"},
		Steps: []Step{
			{
				Title: "Create Database shop (postgres 16, 1 replica)",
				Say: "We write only what we want: a Database called shop, postgres 16, one replica. That is the spec, the desired state. " +
					"On the timeline, the create arrives as a watch event, and the event only queues a request: a name to look at, not a description of what changed.",
				Do:    createDatabase("shop", v1alpha1.EnginePostgres, "16", 1),
				Until: finalizerAdded("shop"),
				// The next step narrates what this one set off: it follows
				// as soon as the first reconcile has begun.
				Dwell: time.Millisecond,
			},
			{
				Title: "On the timeline: the reconcile creates Secret, Service, StatefulSet, then Ready",
				Say: "The reconcile fetches shop and compares the spec with the cluster: nothing exists yet. " +
					"So it creates a Secret, a Service and a StatefulSet, each with an ownerReference to shop, and writes status once: Progressing, observedGeneration 1. " +
					"The StatefulSet's Pod becoming ready is an event too; the reconcile it triggers writes Ready=True.",
				Until: ready("shop", 0),
			},
			{
				Title: "Scale to 3",
				Say: "Now we change the spec: replicas from 1 to 3. The API server bumps metadata.generation to 2, " +
					"and until the controller has acted on it, status.observedGeneration still says 1: anyone can see the status is stale. " +
					"The next reconcile finds replicas 1 → 3 in its diff, updates the StatefulSet and stamps observedGeneration 2.",
				Do:    scaleDatabase("shop", 3),
				Until: ready("shop", 3),
			},
			{
				Title: "Drift: delete the StatefulSet; watch the controller put it back",
				Say: "Someone deletes shop's StatefulSet behind the controller's back. shop owns it, so the delete is an event on shop's queue. " +
					"The reconcile replays nothing: it compares desired with actual once more, finds the StatefulSet missing and creates it again. " +
					"That is level-triggered: make it so, from whatever state it finds.",
				Do:    deleteStatefulSet("shop"),
				Until: statefulSetRecreated("shop"),
			},
			{
				Title: "Delete: watch the finalizer take the snapshot",
				Say: "We delete shop. Its finalizer, db.oplab.dev/final-snapshot, holds it: deletionTimestamp is set, but the object stays, Terminating, " +
					"while the controller drains the StatefulSet, writes the ConfigMap shop-final-snapshot and only then removes the finalizer. " +
					"Then shop goes, and the garbage collector deletes the children it owned. The snapshot has no owner, so it stays.",
				Do:    deleteDatabase("shop"),
				Until: snapshotTaken("shop"),
			},
			{
				Title: "What we saw",
				Say: "One loop did all of it: fetch, compare spec with the cluster, act idempotently, write status with observedGeneration. " +
					"Scaling, drift and deletion were not special cases; they were the same reconcile finding a different difference. " +
					"OwnerReferences cleaned up the children; the finalizer held shop's own deletion until its cleanup was done.",
			},
		},
	},
	{
		ID:        "died-mid-deletion",
		Title:     "The controller dies mid-deletion",
		Summary:   "Pause the controller for the namespace, delete a Database, watch it hang in Terminating, then bring the controller back.",
		Databases: []string{"ledger"},
		Steps: []Step{
			{
				Title: "Create Database ledger and let it become Ready",
				Say: "A Database called ledger, postgres 16, one replica. The first reconcile puts the finalizer db.oplab.dev/final-snapshot on it, " +
					"a promise that the controller will clean up before ledger is allowed to go. Wait for Ready=True.",
				Do:    createDatabase("ledger", v1alpha1.EnginePostgres, "16", 1),
				Until: ready("ledger", 0),
			},
			{
				Title: "The controller dies",
				Say: "Now the controller is gone. Here we pause it for this namespace only, as if its Pod had crashed; every other learner's Databases are still reconciled. " +
					"Watch events still arrive, but they are held: nothing reconciles them.",
				Do: pauseNamespace,
			},
			{
				Title: "Delete ledger: it hangs in Terminating",
				Say: "We delete ledger. The API server sets deletionTimestamp, but it will not remove the object while a finalizer is on it, and only the controller removes that finalizer. " +
					"So ledger stays, Terminating, and no reconcile runs. With no controller coming back, it would stay forever: a stuck finalizer.",
				Do:    deleteDatabase("ledger"),
				Until: heldTerminating("ledger"),
				Dwell: 8 * time.Second,
			},
			{
				Title: "The escape hatch, and what it costs",
				Say: "The escape hatch is kubectl patch database ledger --type=merge -p '{\"metadata\":{\"finalizers\":null}}'. " +
					"Deletion then finishes at once, but the cleanup never runs: no final snapshot. Document it, and use it only when the controller is truly gone. " +
					"We bring the controller back instead.",
				Until: heldTerminating("ledger"),
			},
			{
				Title: "The controller comes back",
				Say: "The controller is back. It needs no replay of the delete it missed: level-triggered, it reconciles every Database in the namespace, " +
					"finds ledger with a deletionTimestamp, and runs the finalizer: drain, snapshot, remove. ledger goes; ledger-final-snapshot stays.",
				Do:    resumeNamespace,
				Until: snapshotTaken("ledger"),
			},
			{
				Title: "What we saw",
				Say: "A finalizer is a promise that the controller will be there. If it is not, deletion waits, and nothing is lost while it waits: " +
					"when the controller returns, it converges from the state it finds. The escape hatch trades that cleanup for speed.",
			},
		},
	},
}
