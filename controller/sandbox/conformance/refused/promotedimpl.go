package refused

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type holder struct {
	metav1.ObjectMeta
}

// PromotedInterface assigns a type of the code's own that has an API
// interface's methods through an embedded API struct to that interface.
func PromotedInterface() string {
	h := &holder{}
	h.Name = "shop"
	var obj metav1.Object = h // sandbox: cannot run it
	return obj.GetName()
}
