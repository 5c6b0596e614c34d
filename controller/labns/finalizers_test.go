package labns

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// sentPatches records the merge patches RemoveFinalizers sends.
type sentPatches struct{ sent []map[string]any }

func (s *sentPatches) Patch(_ context.Context, obj client.Object, p client.Patch, _ ...client.PatchOption) error {
	data, err := p.Data(obj)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	s.sent = append(s.sent, m["metadata"].(map[string]any))
	return nil
}

// What the one way of removing finalizers sends: all of them, only this
// object's (its UID), or, with keep, the others, on the version read.
func TestRemoveFinalizersPatches(t *testing.T) {
	db := func(uid string) *v1alpha1.Database {
		return &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: "lab-a", Name: "shop", UID: types.UID(uid), ResourceVersion: "42",
			Finalizers: []string{"db.oplab.dev/snapshot", "evil.example/never"}}}
	}
	var p sentPatches
	if removed, err := RemoveFinalizers(t.Context(), &p, db("")); err != nil || len(removed) != 2 {
		t.Fatalf("remove all = %v, %v; want both finalizers reported", removed, err)
	}
	if got := p.sent[0]; len(got) != 1 || got["finalizers"] != nil {
		t.Errorf("remove all without a UID sent %v; want finalizers null alone", got)
	}
	if _, err := RemoveFinalizers(t.Context(), &p, db("u-1")); err != nil {
		t.Fatal(err)
	}
	if got := p.sent[1]; got["uid"] != "u-1" || got["finalizers"] != nil || got["resourceVersion"] != nil {
		t.Errorf("remove all with a UID sent %v; want the UID as precondition, whatever the version", got)
	}
	removed, err := RemoveFinalizers(t.Context(), &p, db("u-1"), "db.oplab.dev/snapshot")
	if err != nil || !slices.Equal(removed, []string{"evil.example/never"}) {
		t.Fatalf("remove all but oplab's = %v, %v; want the foreign one", removed, err)
	}
	if got := p.sent[2]; got["uid"] != "u-1" || got["resourceVersion"] != "42" || len(got["finalizers"].([]any)) != 1 || got["finalizers"].([]any)[0] != "db.oplab.dev/snapshot" {
		t.Errorf("remove all but oplab's sent %v; want oplab's kept, on version 42 of u-1", got)
	}
	only := db("u-1")
	only.Finalizers = []string{"db.oplab.dev/snapshot"}
	if removed, err := RemoveFinalizers(t.Context(), &p, only, "db.oplab.dev/snapshot"); err != nil || removed != nil || len(p.sent) != 3 {
		t.Errorf("nothing to take off: %v, %v, %d patches; want nothing sent", removed, err, len(p.sent))
	}
}

func TestRemoveFinalizersSaysWhichFailed(t *testing.T) {
	_, err := RemoveFinalizers(t.Context(), failing{}, &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "shop", Finalizers: []string{"a/b"}}})
	if err == nil || !strings.Contains(err.Error(), "remove the finalizers [a/b] of Database shop: refused") {
		t.Errorf("err = %v; want it to name the finalizers, the kind and the name", err)
	}
}

type failing struct{}

func (failing) Patch(context.Context, client.Object, client.Patch, ...client.PatchOption) error {
	return errRefused
}

var errRefused = errors.New("refused")
