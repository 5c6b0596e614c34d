package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/time/rate"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// codeWrites is learner code's client below the trace: reads through
// reads (the manager's cache, oplab's identity), every write through
// writes (the learner-code ServiceAccount) after its turn at lim, and only
// once the object passes the learner-code policy (code_policy.go) with the
// engines' images from registry. Apply and DeleteAllOf, which the sandbox
// never sends, are refused rather than left to oplab's identity.
func codeWrites(reads, writes client.Client, lim *codeLimiter, registry string) client.Client {
	check := func(obj client.Object) error {
		if why := codeRefusal(obj, registry); why != "" {
			return refuseCode(obj, why)
		}
		return nil
	}
	return interceptor.NewClient(withoutWatch{reads}, interceptor.Funcs{
		Create: func(ctx context.Context, _ client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			codeDefaults(obj)
			if err := check(obj); err != nil {
				return err
			}
			if err := lim.wait(ctx, "create", obj); err != nil {
				return err
			}
			return writes.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, _ client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			codeDefaults(obj)
			if err := check(obj); err != nil {
				return err
			}
			if err := lim.wait(ctx, "update", obj); err != nil {
				return err
			}
			return writes.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, _ client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := lim.wait(ctx, "patch", obj); err != nil {
				return err
			}
			// What a patch makes of the object only the API server knows:
			// it is asked first with a dry run (which writes nothing), and
			// the result checked as a create or update would be.
			if policed(obj) {
				trial := obj.DeepCopyObject().(client.Object)
				if err := writes.Patch(ctx, trial, patch, append(slices.Clone(opts), client.DryRunAll)...); err != nil {
					return err
				}
				if err := check(trial); err != nil {
					return err
				}
			}
			return writes.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, _ client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if err := lim.wait(ctx, "delete", obj); err != nil {
				return err
			}
			return writes.Delete(ctx, obj, opts...)
		},
		SubResourceCreate: func(ctx context.Context, _ client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			if err := lim.wait(ctx, "create "+sub, obj); err != nil {
				return err
			}
			return writes.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, _ client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := lim.wait(ctx, "update "+sub, obj); err != nil {
				return err
			}
			return writes.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, _ client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := lim.wait(ctx, "patch "+sub, obj); err != nil {
				return err
			}
			return writes.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		Apply: func(context.Context, client.WithWatch, runtime.ApplyConfiguration, ...client.ApplyOption) error {
			return errors.New("learner code may not use server-side apply")
		},
		DeleteAllOf: func(context.Context, client.WithWatch, client.Object, ...client.DeleteAllOfOption) error {
			return errors.New("learner code may not delete all of a kind at once")
		},
	})
}

// policed reports whether the learner-code policy looks inside obj's kind.
func policed(obj client.Object) bool {
	switch obj.(type) {
	case *appsv1.StatefulSet, *corev1.Service, *corev1.Secret:
		return true
	}
	return false
}

// codeLimiter paces learner code's writes in one namespace: a token bucket
// of perSecond writes a second, as many at once.
type codeLimiter struct {
	perSecond int
	lim       *rate.Limiter
}

func newCodeLimiter(perSecond int) *codeLimiter {
	return &codeLimiter{perSecond: perSecond, lim: rate.NewLimiter(rate.Limit(perSecond), perSecond)}
}

// wait takes obj's write's turn. A write that must wait says so on the
// timeline first (a throttled step), so a learner whose loop writes on
// every turn sees why it slowed down.
func (l *codeLimiter) wait(ctx context.Context, verb string, obj client.Object) error {
	if l == nil {
		return nil // unpaced (a Driver's)
	}
	r := l.lim.Reserve()
	d := r.Delay()
	if d <= 0 {
		return nil
	}
	note(ctx, Step{Type: StepThrottled, Action: verb, Duration: d,
		Target:  &ObjectRef{Kind: kindOf(obj), Namespace: obj.GetNamespace(), Name: obj.GetName()},
		Message: fmt.Sprintf("your code's writes are limited to %d a second (%d at once) in this namespace: this one waited its turn", l.perSecond, l.perSecond)})
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		r.Cancel()
		return ctx.Err()
	}
}
