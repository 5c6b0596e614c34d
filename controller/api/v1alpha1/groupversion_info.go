// Package v1alpha1 holds the Database API of oplab, group db.oplab.dev.
//
// The types carry kubebuilder markers; controller-gen turns them into the
// deepcopy functions (zz_generated.deepcopy.go) and the CRD manifest under
// controller/config/crd. Neither is written by hand.
//
// +kubebuilder:object:generate=true
// +groupName=db.oplab.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the Database API.
	GroupVersion = schema.GroupVersion{Group: "db.oplab.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the API's types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the API's types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
