package controller

import (
	"fmt"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What learner code may write, checked before the write is sent: the same
// rules, in the same words, as the admission policy oplab-learner-code
// (config/policy/code.yaml), which holds them at the API server whatever
// reaches it. Here the learner's code hears of a refusal at once, as the
// error of the call it made, before the API server is asked.

// MaxCodeReplicas is the most replicas learner code may give a
// StatefulSet: a Database's own maximum, within the namespace's Pod quota.
const MaxCodeReplicas = 5

// MaxClaimStorage is the most storage one volume claim of learner code may
// ask for: the lab namespace's whole storage quota (controller/labns).
var MaxClaimStorage = resource.MustParse("10Gi")

// engineImage is what follows the registry in an engine's image: the
// engine and a version as spec.version allows it.
var engineImage = regexp.MustCompile(`^(postgres|mysql):[0-9A-Za-z][0-9A-Za-z._-]{0,31}$`)

// codeRefusal returns why learner code may not write obj, in the policy's
// words, or "" when it may. registry is where the engines' images come
// from ("" for the short names).
func codeRefusal(obj client.Object, registry string) string {
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		return statefulSetRefusal(o, registry)
	case *corev1.Service:
		return serviceRefusal(o)
	case *corev1.Secret:
		if o.Type != "" && o.Type != corev1.SecretTypeOpaque {
			return fmt.Sprintf("your code may make only Opaque Secrets: Secret %s is of type %s", o.Name, o.Type)
		}
	}
	return ""
}

func statefulSetRefusal(s *appsv1.StatefulSet, registry string) string {
	prefix := ""
	if registry = strings.TrimSuffix(registry, "/"); registry != "" {
		prefix = registry + "/"
	}
	pod := s.Spec.Template.Spec
	containers := append(append([]corev1.Container{}, pod.Containers...), pod.InitContainers...)
	var images []string
	ok := true
	for _, c := range containers {
		images = append(images, c.Image)
		rest, found := strings.CutPrefix(c.Image, prefix)
		ok = ok && found && engineImage.MatchString(rest)
	}
	if !ok {
		return fmt.Sprintf("your code may run only a Database engine's image, %spostgres:VERSION or %smysql:VERSION; StatefulSet %s runs %s",
			prefix, prefix, s.Name, strings.Join(images, ", "))
	}
	for _, c := range containers {
		if len(c.Command) > 0 || len(c.Args) > 0 {
			return fmt.Sprintf("your code may not give a container a command or args of its own: StatefulSet %s runs the engine image's own", s.Name)
		}
	}
	var volumes []string
	for _, v := range pod.Volumes {
		if v.EmptyDir == nil && v.ConfigMap == nil && v.Secret == nil && v.PersistentVolumeClaim == nil {
			volumes = append(volumes, v.Name)
		}
	}
	if len(volumes) > 0 {
		return fmt.Sprintf("your code may mount only emptyDir, configMap, secret and persistentVolumeClaim volumes: StatefulSet %s mounts %s",
			s.Name, strings.Join(volumes, ", "))
	}
	defaultAccount := func(n string) bool { return n == "" || n == "default" }
	if !defaultAccount(pod.ServiceAccountName) || !defaultAccount(pod.DeprecatedServiceAccount) ||
		pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		return fmt.Sprintf("your code's Pods run as the namespace's default ServiceAccount with no token mounted (automountServiceAccountToken: false): StatefulSet %s asks otherwise", s.Name)
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC || pod.NodeName != "" || len(pod.Tolerations) > 0 ||
		pod.RuntimeClassName != nil || pod.PriorityClassName != "" {
		return fmt.Sprintf("your code may not place its Pods on the host's network, PID or IPC namespaces, on a node of its choosing, with tolerations, a runtime class or a priority class: StatefulSet %s does", s.Name)
	}
	if s.Spec.Replicas != nil && *s.Spec.Replicas > MaxCodeReplicas {
		return fmt.Sprintf("your code may ask for at most %d replicas, a Database's own maximum: StatefulSet %s asks for %d", MaxCodeReplicas, s.Name, *s.Spec.Replicas)
	}
	for _, t := range s.Spec.VolumeClaimTemplates {
		q, named := t.Spec.Resources.Requests[corev1.ResourceStorage]
		if !named || q.Cmp(MaxClaimStorage) > 0 {
			return fmt.Sprintf("each volume claim your code asks for must name its storage, at most the namespace's storage quota of %s: StatefulSet %s asks for more",
				MaxClaimStorage.String(), s.Name)
		}
	}
	return ""
}

func serviceRefusal(s *corev1.Service) string {
	if (s.Spec.Type == "" || s.Spec.Type == corev1.ServiceTypeClusterIP) && len(s.Spec.ExternalIPs) == 0 &&
		s.Spec.ExternalName == "" && s.Spec.LoadBalancerIP == "" && len(s.Spec.LoadBalancerSourceRanges) == 0 {
		return ""
	}
	typ := string(s.Spec.Type)
	if typ == "" {
		typ = string(corev1.ServiceTypeClusterIP)
	}
	msg := fmt.Sprintf("your code may make only ClusterIP or headless Services, with no externalIPs: Service %s is %s", s.Name, typ)
	if len(s.Spec.ExternalIPs) > 0 {
		msg += " with externalIPs " + strings.Join(s.Spec.ExternalIPs, ", ")
	}
	return msg
}

// codeDefaults fills in what the policy demands and the learner's code may
// well leave out, as a mutating admission webhook would: a StatefulSet's
// Pods mount no ServiceAccount token unless the code asked for one (which
// codeRefusal then refuses).
func codeDefaults(obj client.Object) {
	if s, ok := obj.(*appsv1.StatefulSet); ok && s.Spec.Template.Spec.AutomountServiceAccountToken == nil {
		s.Spec.Template.Spec.AutomountServiceAccountToken = ptr.To(false)
	}
}

// refuseCode is the Forbidden error learner code gets for obj.
func refuseCode(obj client.Object, why string) error {
	gr := schema.GroupResource{Resource: strings.ToLower(kindOf(obj)) + "s"}
	if _, ok := obj.(*appsv1.StatefulSet); ok {
		gr.Group = appsv1.GroupName
	}
	return apierrors.NewForbidden(gr, obj.GetName(), fmt.Errorf("%s", why))
}
