package controller

import (
	"slices"
	"testing"
)

func TestCRDsParseTheEmbeddedManifest(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != 1 || crds[0].Name != "databases.db.oplab.dev" {
		t.Fatalf("CRDs = %d, first %q; want databases.db.oplab.dev", len(crds), crds[0].Name)
	}
	v := crds[0].Spec.Versions[0]
	if v.Subresources == nil || v.Subresources.Status == nil {
		t.Error("status subresource missing")
	}
	var cols []string
	for _, c := range v.AdditionalPrinterColumns {
		cols = append(cols, c.Name)
	}
	if want := []string{"Ready", "Generation", "Observed", "Replicas", "Deleting", "Endpoint", "Age"}; !slices.Equal(cols, want) {
		t.Errorf("printer columns = %v, want %v", cols, want)
	}
	spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
	if spec.Default == nil {
		t.Error("spec has no default {}: an omitted spec would get no field defaults")
	}
}

// TestInstallCRDsIsIdempotent runs alone, not in parallel: it writes the
// cluster-wide CRD that every other test's Databases are served by.
func TestInstallCRDsIsIdempotent(t *testing.T) {
	e := newEnv(t)
	// The shared cluster installed the CRD already: this exercises the
	// update path, twice, and the wait for Established.
	for range 2 {
		if err := InstallCRDs(e.ctx, e.cfg); err != nil {
			t.Fatalf("InstallCRDs: %v", err)
		}
	}
}
