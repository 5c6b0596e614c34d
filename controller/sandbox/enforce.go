package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/oplab-dev/oplab/controller"
)

// Execute makes one call learner code asked for, with c, if it stays in
// req's namespace and on the whitelisted kinds; anything else is refused with
// an error the learner's code receives like any other. It never panics,
// whatever the call holds: the child is not trusted.
func Execute(ctx context.Context, c client.Client, req reconcile.Request, cl call) reply {
	ns := req.Namespace
	k, ok := kindByName(cl.Kind)
	if !ok {
		return refuse("kind %q is not available in the sandbox: only %v", cl.Kind, KindNames())
	}
	if cl.Namespace != ns {
		if cl.Namespace == "" {
			return refuse("%s %s %q has no namespace: your code works in namespace %q (req.Namespace)", cl.Verb, cl.Kind, cl.Name, ns)
		}
		return refuse("%s %s %s/%s refused: your code may touch only namespace %q", cl.Verb, cl.Kind, cl.Namespace, cl.Name, ns)
	}
	switch cl.Verb {
	case "get":
		obj := k.newObj()
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: cl.Name}, obj)
		return replyOf(obj, err)
	case "list":
		list := k.newList()
		opts := []client.ListOption{client.InNamespace(ns)}
		if cl.Labels != "" {
			sel, err := labels.Parse(cl.Labels)
			if err != nil {
				return refuse("label selector %q: %v", cl.Labels, err)
			}
			opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
		}
		err := c.List(ctx, list, opts...)
		return replyOf(list, err)
	case "create", "update", "delete", "status.update":
		obj := k.newObj()
		if err := json.Unmarshal(cl.Object, obj); err != nil {
			return refuse("decoding the %s to %s: %v", cl.Kind, cl.Verb, err)
		}
		if obj.GetNamespace() != ns || obj.GetName() != cl.Name {
			return refuse("%s %s refused: the object names another namespace or name than the call", cl.Verb, cl.Kind)
		}
		var err error
		switch cl.Verb {
		case "create":
			labelChild(cl.Kind, obj)
			// The traced client says when this is the final snapshot.
			err = c.Create(ctx, obj)
		case "update":
			labelChild(cl.Kind, obj)
			err = c.Update(ctx, obj)
		case "delete":
			err = c.Delete(ctx, obj)
		default:
			err = c.Status().Update(ctx, obj)
		}
		return replyOf(obj, err)
	case "patch", "status.patch":
		pt := types.PatchType(cl.PatchType)
		switch pt {
		case types.MergePatchType, types.JSONPatchType, types.StrategicMergePatchType:
		default:
			return refuse("patch type %q is not available in the sandbox: use client.MergeFrom", cl.PatchType)
		}
		obj := k.newObj()
		obj.SetNamespace(ns)
		obj.SetName(cl.Name)
		patch := client.RawPatch(pt, cl.Patch)
		var err error
		if cl.Verb == "patch" {
			err = c.Patch(ctx, obj, patch)
		} else {
			err = c.Status().Patch(ctx, obj, patch)
		}
		return replyOf(obj, err)
	}
	return refuse("%q is not a client call the sandbox knows", cl.Verb)
}

// labelChild gives a child object the label oplab's controller watches its
// children by, when the learner's code left it out: oplab's informers see
// only labelled children, so without it the code would never hear of its
// StatefulSet again. The value is the controlling Database's name.
func labelChild(kind string, obj client.Object) {
	if kind == "Database" {
		return
	}
	if _, ok := obj.GetLabels()[controller.LabelDatabase]; ok {
		return
	}
	owner := metav1.GetControllerOf(obj)
	if owner == nil || owner.Kind != "Database" {
		return
	}
	l := obj.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[controller.LabelDatabase] = owner.Name
	obj.SetLabels(l)
}

func refuse(format string, args ...any) reply {
	return reply{Error: "oplab sandbox: " + fmt.Sprintf(format, args...)}
}

// replyOf is the reply to a call that returned err and left obj.
func replyOf(obj any, err error) reply {
	if err != nil {
		var st apierrors.APIStatus
		if errors.As(err, &st) {
			s := st.Status()
			return reply{Status: &s}
		}
		return reply{Error: err.Error()}
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return reply{Error: "encoding the reply: " + err.Error()}
	}
	return reply{Object: raw}
}
