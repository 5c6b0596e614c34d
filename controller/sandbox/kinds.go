package sandbox

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// kind is one kind learner code may touch: its object and list types.
// Everything a Database reconciler needs, nothing cluster-scoped.
type kind struct {
	name    string
	newObj  func() client.Object
	newList func() client.ObjectList
}

var kinds = []kind{
	{"Database", func() client.Object { return &dbv1.Database{} }, func() client.ObjectList { return &dbv1.DatabaseList{} }},
	{"StatefulSet", func() client.Object { return &appsv1.StatefulSet{} }, func() client.ObjectList { return &appsv1.StatefulSetList{} }},
	{"Service", func() client.Object { return &corev1.Service{} }, func() client.ObjectList { return &corev1.ServiceList{} }},
	{"Secret", func() client.Object { return &corev1.Secret{} }, func() client.ObjectList { return &corev1.SecretList{} }},
	{"ConfigMap", func() client.Object { return &corev1.ConfigMap{} }, func() client.ObjectList { return &corev1.ConfigMapList{} }},
}

// KindNames lists the kinds learner code may read and write.
func KindNames() []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = k.name
	}
	return out
}

func kindByName(name string) (kind, bool) {
	for _, k := range kinds {
		if k.name == name {
			return k, true
		}
	}
	return kind{}, false
}

// kindOfObject names the kind of obj, or fails for any type outside the list.
func kindOfObject(obj runtime.Object) (string, error) {
	switch obj.(type) {
	case *dbv1.Database:
		return "Database", nil
	case *appsv1.StatefulSet:
		return "StatefulSet", nil
	case *corev1.Service:
		return "Service", nil
	case *corev1.Secret:
		return "Secret", nil
	case *corev1.ConfigMap:
		return "ConfigMap", nil
	}
	return "", fmt.Errorf("the sandbox's client works only on %v, not %T", KindNames(), obj)
}

func kindOfList(list client.ObjectList) (string, error) {
	switch list.(type) {
	case *dbv1.DatabaseList:
		return "Database", nil
	case *appsv1.StatefulSetList:
		return "StatefulSet", nil
	case *corev1.ServiceList:
		return "Service", nil
	case *corev1.SecretList:
		return "Secret", nil
	case *corev1.ConfigMapList:
		return "ConfigMap", nil
	}
	return "", fmt.Errorf("the sandbox's client lists only %v, not %T", KindNames(), list)
}

// newScheme is the scheme learner code is given (for SetControllerReference):
// client-go's types and the Database.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(fmt.Sprintf("building scheme: %v", err))
	}
	if err := dbv1.AddToScheme(s); err != nil {
		panic(fmt.Sprintf("building scheme: %v", err))
	}
	return s
}
