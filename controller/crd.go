package controller

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// crdFS holds the CRD manifests controller-gen writes from the markers in
// controller/api/v1alpha1. They are embedded so the binary installs exactly
// the schema it was built with.
//
//go:embed config/crd/*.yaml
var crdFS embed.FS

// CRDs returns the CustomResourceDefinitions of the Database API, parsed from
// the embedded manifests.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(crdFS, "config/crd/*.yaml")
	if err != nil {
		return nil, fmt.Errorf("listing embedded crds: %w", err)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		crd, err := parseCRD(f)
		if err != nil {
			return nil, err
		}
		out = append(out, crd)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no crd manifests embedded under config/crd")
	}
	return out, nil
}

func parseCRD(name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	raw, err := crdFS.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("reading embedded crd %s: %w", name, err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
		return nil, fmt.Errorf("parsing embedded crd %s: %w", name, err)
	}
	if crd.Kind != "CustomResourceDefinition" || crd.Name == "" {
		return nil, fmt.Errorf("embedded crd %s: not a named CustomResourceDefinition (kind %q)", name, crd.Kind)
	}
	return &crd, nil
}

// InstallCRDs creates the CRDs, or updates them to the embedded version, and
// waits until the API server reports them Established. It is for running
// against an existing cluster; the embedded cluster installs CRDs itself.
func InstallCRDs(ctx context.Context, cfg *rest.Config) error {
	crds, err := CRDs()
	if err != nil {
		return err
	}
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating apiextensions client: %w", err)
	}
	api := cs.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		if err := createOrUpdateCRD(ctx, api, crd); err != nil {
			return err
		}
	}
	for _, crd := range crds {
		if err := waitEstablished(ctx, api, crd.Name); err != nil {
			return err
		}
	}
	return nil
}

type crdAPI interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*apiextensionsv1.CustomResourceDefinition, error)
	Create(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, opts metav1.CreateOptions) (*apiextensionsv1.CustomResourceDefinition, error)
	Update(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, opts metav1.UpdateOptions) (*apiextensionsv1.CustomResourceDefinition, error)
}

func createOrUpdateCRD(ctx context.Context, api crdAPI, crd *apiextensionsv1.CustomResourceDefinition) error {
	existing, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, err := api.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating crd %s: %w", crd.Name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading crd %s: %w", crd.Name, err)
	}
	update := crd.DeepCopy()
	update.ResourceVersion = existing.ResourceVersion
	if _, err := api.Update(ctx, update, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating crd %s: %w", crd.Name, err)
	}
	return nil
}

func waitEstablished(ctx context.Context, api crdAPI, name string) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		crd, err := api.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling through transient errors until the timeout
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for crd %s to be established: %w", name, err)
	}
	return nil
}
