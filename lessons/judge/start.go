package judge

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/labns"
)

// WipeSummary says, for the Start button, what Start does before the
// challenge's own setup. The page shows it beside a confirm.
const WipeSummary = "Start deletes every Database in your namespace (each goes through its finalizer, " +
	"so its final snapshot is written), then removes those snapshots and anything else the Databases left " +
	"(objects labelled " + controller.LabelDatabase + ") or an earlier challenge set up (labelled " + LabelChallenge + "), gives your namespace back to oplab's controller (resumed, and in place of your own code if it runs), " +
	"and sets up this challenge's starting state. Your other objects are not touched."

// LabelChallenge marks what a challenge's prepare made that is not a
// Database's child; Wipe deletes it at the next Start.
const LabelChallenge = "db.oplab.dev/challenge"

// wipeTimeout bounds the wait for the Databases to go. A Database that is
// still there by then is held by a finalizer nobody will remove (the
// controller stopped for everyone, say): Start strips the finalizer so the
// wipe finishes.
const wipeTimeout = 30 * time.Second

// Start wipes the learner's Databases and runs the challenge's Prepare. It
// returns the time the challenge started: the trace before it belongs to
// earlier work and is not judged.
func (c *Challenge) Start(ctx context.Context, env PrepareEnv) (time.Time, error) {
	if err := Wipe(ctx, env); err != nil {
		return time.Time{}, fmt.Errorf("start challenge %s: %w", c.ID, err)
	}
	started := time.Now()
	if env.Started != nil {
		env.Started(started)
	}
	if c.Prepare == "" {
		return started, nil
	}
	p, ok := LookupPrepare(c.Prepare)
	if !ok {
		return time.Time{}, fmt.Errorf("start challenge %s: prepare %q is not registered", c.ID, c.Prepare)
	}
	if err := p(ctx, env); err != nil {
		return time.Time{}, fmt.Errorf("start challenge %s: prepare %s: %w", c.ID, c.Prepare, err)
	}
	return started, nil
}

// Wipe resumes env's namespace, deletes its Databases and waits until they
// are gone, then deletes what Databases leave behind: objects labelled with
// controller.LabelDatabase (final snapshots, children orphaned on purpose),
// and what a challenge made beside them (labelled LabelChallenge).
func Wipe(ctx context.Context, env PrepareEnv) error {
	if env.Resume != nil {
		if err := env.Resume(ctx); err != nil {
			return fmt.Errorf("resume namespace %s: %w", env.Namespace, err)
		}
	}
	in := client.InNamespace(env.Namespace)
	if err := env.Client.DeleteAllOf(ctx, &dbv1.Database{}, in); err != nil {
		return fmt.Errorf("delete Databases in %s: %w", env.Namespace, err)
	}
	if err := waitNoDatabases(ctx, env, wipeTimeout); err != nil {
		return err
	}
	for _, label := range []string{controller.LabelDatabase, LabelChallenge} {
		req, err := labels.NewRequirement(label, selection.Exists, nil)
		if err != nil {
			return fmt.Errorf("select objects labelled %s: %w", label, err)
		}
		sel := client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*req)}
		for _, obj := range []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}, &corev1.Secret{}, &corev1.ConfigMap{}} {
			if err := env.Client.DeleteAllOf(ctx, obj, in, sel, client.PropagationPolicy("Background")); err != nil {
				return fmt.Errorf("delete leftover %T labelled %s in %s: %w", obj, label, env.Namespace, err)
			}
		}
	}
	return nil
}

// waitNoDatabases polls until the namespace holds no Database; after limit
// it removes the finalizers still holding some and waits again.
func waitNoDatabases(ctx context.Context, env PrepareEnv, limit time.Duration) error {
	end := time.Now().Add(limit)
	stripped := false
	for {
		var list dbv1.DatabaseList
		if err := env.Client.List(ctx, &list, client.InNamespace(env.Namespace)); err != nil {
			return fmt.Errorf("list Databases in %s: %w", env.Namespace, err)
		}
		if len(list.Items) == 0 {
			return nil
		}
		for i := range list.Items {
			if err := dropForeignFinalizers(ctx, env, &list.Items[i]); err != nil {
				return err
			}
		}
		if time.Now().After(end) {
			if stripped {
				return fmt.Errorf("wipe %s: %d Databases still there after %s, finalizers removed", env.Namespace, len(list.Items), 2*limit)
			}
			for i := range list.Items {
				if err := stripFinalizers(ctx, env.Client, &list.Items[i]); err != nil {
					return err
				}
			}
			stripped, end = true, time.Now().Add(limit)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wipe %s: %w", env.Namespace, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// dropForeignFinalizers takes off a deleted Database's finalizers that no
// controller here removes (the learner's own code may have added one
// before Start took the namespace back), so the wipe need not wait for
// them; oplab's stays, so its snapshot is written. A conflict (the
// controller removed its own meanwhile) is tried again at the next poll.
func dropForeignFinalizers(ctx context.Context, env PrepareEnv, db *dbv1.Database) error {
	if db.DeletionTimestamp.IsZero() {
		return nil
	}
	foreign, err := labns.RemoveFinalizers(ctx, env.Client, db, controller.Finalizer)
	switch {
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	if len(foreign) > 0 && env.Said != nil {
		env.Said(fmt.Sprintf("Database %s carried finalizer %s, which no controller here removes (your code's?): Start took it off.", db.Name, strings.Join(foreign, ", ")))
	}
	return nil
}

// stripFinalizers takes every finalizer off db, oplab's too: the wipe's
// last resort. A Database gone, or made again, meanwhile is left alone.
func stripFinalizers(ctx context.Context, c client.Client, db *dbv1.Database) error {
	if _, err := labns.RemoveFinalizers(ctx, c, db); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}
