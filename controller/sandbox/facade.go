package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// facade is the client.Client learner code is given in the child. It holds
// no connection to anything but the pipe: each call is sent to the parent,
// which decides whether to make it and answers with the API server's reply.
type facade struct {
	ask    func(call) reply
	scheme *runtime.Scheme
}

var _ client.Client = &facade{}

// do sends c and decodes the reply into into (when the reply carries an
// object): the parent's refusal or the API server's error comes back as an
// error of the same kind, so apierrors.IsNotFound and friends work.
func (f *facade) do(c call, into any) error {
	r := f.ask(c)
	switch {
	case r.Status != nil:
		return &apierrors.StatusError{ErrStatus: *r.Status}
	case r.Error != "":
		return errors.New(r.Error)
	case into != nil && len(r.Object) > 0:
		if err := json.Unmarshal(r.Object, into); err != nil {
			return fmt.Errorf("decoding the reply to %s %s: %w", c.Verb, c.Kind, err)
		}
	}
	return nil
}

func (f *facade) objectCall(verb string, obj client.Object) (call, error) {
	k, err := kindOfObject(obj)
	if err != nil {
		return call{}, err
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return call{}, fmt.Errorf("encoding %s: %w", k, err)
	}
	return call{Verb: verb, Kind: k, Namespace: obj.GetNamespace(), Name: obj.GetName(), Object: raw}, nil
}

func (f *facade) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	k, err := kindOfObject(obj)
	if err != nil {
		return err
	}
	return f.do(call{Verb: "get", Kind: k, Namespace: key.Namespace, Name: key.Name}, obj)
}

func (f *facade) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	k, err := kindOfList(list)
	if err != nil {
		return err
	}
	o := (&client.ListOptions{}).ApplyOptions(opts)
	c := call{Verb: "list", Kind: k, Namespace: o.Namespace}
	if o.LabelSelector != nil {
		c.Labels = o.LabelSelector.String()
	}
	return f.do(c, list)
}

func (f *facade) Create(_ context.Context, obj client.Object, _ ...client.CreateOption) error {
	c, err := f.objectCall("create", obj)
	if err != nil {
		return err
	}
	return f.do(c, obj)
}

func (f *facade) Update(_ context.Context, obj client.Object, _ ...client.UpdateOption) error {
	c, err := f.objectCall("update", obj)
	if err != nil {
		return err
	}
	return f.do(c, obj)
}

func (f *facade) Delete(_ context.Context, obj client.Object, _ ...client.DeleteOption) error {
	c, err := f.objectCall("delete", obj)
	if err != nil {
		return err
	}
	return f.do(c, nil)
}

func (f *facade) Patch(_ context.Context, obj client.Object, patch client.Patch, _ ...client.PatchOption) error {
	return f.patch("patch", obj, patch)
}

func (f *facade) patch(verb string, obj client.Object, patch client.Patch) error {
	c, err := f.objectCall(verb, obj)
	if err != nil {
		return err
	}
	data, err := patch.Data(obj)
	if err != nil {
		return fmt.Errorf("computing the patch: %w", err)
	}
	c.PatchType, c.Patch, c.Object = string(patch.Type()), data, nil
	return f.do(c, obj)
}

func (f *facade) Apply(context.Context, runtime.ApplyConfiguration, ...client.ApplyOption) error {
	return errors.New("server-side apply is not available in the sandbox: use Create, Update or Patch")
}

func (f *facade) DeleteAllOf(context.Context, client.Object, ...client.DeleteAllOfOption) error {
	return errors.New("DeleteAllOf is not available in the sandbox: list and delete one by one")
}

func (f *facade) Status() client.SubResourceWriter { return statusWriter{f} }

func (f *facade) SubResource(sub string) client.SubResourceClient {
	if sub == "status" {
		return statusWriter{f}
	}
	return refusedSubResource{sub}
}

func (f *facade) Scheme() *runtime.Scheme { return f.scheme }

// RESTMapper is nil: learner code never maps kinds to resources itself.
func (f *facade) RESTMapper() meta.RESTMapper { return nil }

func (f *facade) GroupVersionKindFor(obj runtime.Object) (schema.GroupVersionKind, error) {
	return apiutil.GVKForObject(obj, f.scheme)
}

// IsObjectNamespaced is true for every kind the facade takes.
func (f *facade) IsObjectNamespaced(obj runtime.Object) (bool, error) {
	_, err := kindOfObject(obj)
	return err == nil, err
}

// statusWriter is Status() and SubResource("status").
type statusWriter struct{ f *facade }

func (s statusWriter) Get(ctx context.Context, obj, _ client.Object, _ ...client.SubResourceGetOption) error {
	return s.f.Get(ctx, client.ObjectKeyFromObject(obj), obj)
}

func (s statusWriter) Create(context.Context, client.Object, client.Object, ...client.SubResourceCreateOption) error {
	return errors.New("status cannot be created: use Status().Update or Status().Patch")
}

func (s statusWriter) Update(_ context.Context, obj client.Object, _ ...client.SubResourceUpdateOption) error {
	c, err := s.f.objectCall("status.update", obj)
	if err != nil {
		return err
	}
	return s.f.do(c, obj)
}

func (s statusWriter) Patch(_ context.Context, obj client.Object, patch client.Patch, _ ...client.SubResourcePatchOption) error {
	return s.f.patch("status.patch", obj, patch)
}

func (s statusWriter) Apply(context.Context, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
	return errors.New("server-side apply is not available in the sandbox: use Status().Update or Status().Patch")
}

// refusedSubResource is any subresource but status.
type refusedSubResource struct{ name string }

func (r refusedSubResource) err() error {
	return fmt.Errorf("subresource %q is not available in the sandbox: only status", r.name)
}
func (r refusedSubResource) Get(context.Context, client.Object, client.Object, ...client.SubResourceGetOption) error {
	return r.err()
}
func (r refusedSubResource) Create(context.Context, client.Object, client.Object, ...client.SubResourceCreateOption) error {
	return r.err()
}
func (r refusedSubResource) Update(context.Context, client.Object, ...client.SubResourceUpdateOption) error {
	return r.err()
}
func (r refusedSubResource) Patch(context.Context, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
	return r.err()
}
func (r refusedSubResource) Apply(context.Context, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
	return r.err()
}
