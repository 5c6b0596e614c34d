package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Engine names the database engine a Database runs.
// +kubebuilder:validation:Enum=postgres;mysql
type Engine string

// The engines oplab knows how to run.
const (
	EnginePostgres Engine = "postgres"
	EngineMySQL    Engine = "mysql"
)

// DatabaseSpec is the desired state a learner writes.
type DatabaseSpec struct {
	// Engine is the database engine. It cannot change after creation:
	// switching engines would need a data migration, not a reconcile.
	// +kubebuilder:default=postgres
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.engine is immutable"
	// +optional
	Engine Engine `json:"engine,omitempty"`

	// Version is the engine version, used as the container image tag.
	// Empty means the engine's default (see DefaultVersion).
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[0-9A-Za-z][0-9A-Za-z._-]*$`
	// +optional
	Version string `json:"version,omitempty"`

	// Replicas is the number of database Pods.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Storage is the size of each replica's data volume. The embedded
	// cluster has no storage provisioner, so it sizes an emptyDir.
	// omitzero, not omitempty: a Quantity is a struct, which omitempty never
	// omits, so an unset Storage would be sent as "0" and refused.
	// +kubebuilder:default="1Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="spec.storage must be greater than zero"
	// +optional
	Storage resource.Quantity `json:"storage,omitzero"`
}

// SnapshotReference points at the ConfigMap written by the final snapshot.
type SnapshotReference struct {
	// Name of the snapshot ConfigMap, in the Database's namespace.
	Name string `json:"name"`
	// Time the snapshot was taken.
	Time metav1.Time `json:"time"`
}

// DatabaseStatus is what the controller observed and did.
type DatabaseStatus struct {
	// ObservedGeneration is the metadata.generation the controller last
	// acted on; when it lags metadata.generation, the status is stale.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are Ready, Progressing and Degraded.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Endpoint is host:port of the database's Service, published once Ready.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// SecretName names the Secret holding the credentials, published once Ready.
	// +optional
	SecretName string `json:"secretName,omitempty"`

	// ReadyReplicas mirrors the StatefulSet's ready replicas.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// LastSnapshot refers to the last snapshot taken.
	// +optional
	LastSnapshot *SnapshotReference `json:"lastSnapshot,omitempty"`
}

// Database is a managed database that the oplab controller reconciles into a
// Secret, a headless Service and a StatefulSet.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=db
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Generation",type=integer,JSONPath=`.metadata.generation`
// +kubebuilder:printcolumn:name="Observed",type=integer,JSONPath=`.status.observedGeneration`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Deleting",type=date,JSONPath=`.metadata.deletionTimestamp`
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.status.endpoint`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Database struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec defaults to {} so that the API server fills in every field's
	// default even when a learner omits spec altogether.
	// +kubebuilder:default={}
	// +optional
	Spec DatabaseSpec `json:"spec,omitempty"`
	// +optional
	Status DatabaseStatus `json:"status,omitempty"`
}

// DatabaseList is a list of Databases.
//
// +kubebuilder:object:root=true
type DatabaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Database `json:"items"`
}

// DefaultVersion is the engine version used when spec.version is empty.
func DefaultVersion(e Engine) string {
	if e == EngineMySQL {
		return "8.4"
	}
	return "17"
}

func init() {
	SchemeBuilder.Register(&Database{}, &DatabaseList{})
}
