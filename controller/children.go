package controller

import (
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// Labels every child carries. The selector labels are immutable on a
// StatefulSet, so they hold only what never changes: the Database's name.
const (
	LabelDatabase  = "db.oplab.dev/database"
	labelName      = "app.kubernetes.io/name"
	labelInstance  = "app.kubernetes.io/instance"
	labelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "oplab"
)

// SecretName is the name of the Secret holding a Database's credentials.
func SecretName(db string) string { return db + "-credentials" }

// SnapshotName is the name of the ConfigMap the final snapshot writes.
func SnapshotName(db string) string { return db + "-final-snapshot" }

// Endpoint is the host:port the Database's headless Service answers on.
func Endpoint(db *dbv1.Database) string {
	return fmt.Sprintf("%s.%s.svc:%d", db.Name, db.Namespace, enginePort(db.Spec.Engine))
}

func engine(db *dbv1.Database) dbv1.Engine {
	if db.Spec.Engine == "" {
		return dbv1.EnginePostgres
	}
	return db.Spec.Engine
}

func enginePort(e dbv1.Engine) int32 {
	if e == dbv1.EngineMySQL {
		return 3306
	}
	return 5432
}

// image is the container image for the Database's engine and version,
// from registry when set (a mirror: "mirror.example.com/library"),
// otherwise Docker Hub's official images as short names. kwok fakes the
// kubelet, so the image is never pulled in the embedded cluster.
func image(db *dbv1.Database, registry string) string {
	e := engine(db)
	v := db.Spec.Version
	if v == "" {
		v = dbv1.DefaultVersion(e)
	}
	if registry != "" {
		return fmt.Sprintf("%s/%s:%s", strings.TrimSuffix(registry, "/"), e, v)
	}
	return fmt.Sprintf("%s:%s", e, v)
}

func replicas(db *dbv1.Database) int32 {
	if db.Spec.Replicas == 0 {
		return 1
	}
	return db.Spec.Replicas
}

func storage(db *dbv1.Database) resource.Quantity {
	if db.Spec.Storage.IsZero() {
		return resource.MustParse("1Gi")
	}
	return db.Spec.Storage
}

func selectorLabels(db *dbv1.Database) map[string]string {
	return map[string]string{LabelDatabase: db.Name}
}

func childLabels(db *dbv1.Database) map[string]string {
	return map[string]string{
		LabelDatabase:  db.Name,
		labelName:      string(engine(db)),
		labelInstance:  db.Name,
		labelManagedBy: managedBy,
	}
}

// desiredSecret holds freshly generated credentials. It is only ever used to
// create the Secret: an existing Secret's data is never regenerated, or every
// client holding the old password would break.
func desiredSecret(db *dbv1.Database) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: SecretName(db.Name), Namespace: db.Namespace, Labels: childLabels(db)},
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{
			"username": "oplab",
			"password": rand.Text(),
			"database": db.Name,
		},
	}
}

// desiredService is the headless Service that gives each replica a stable
// DNS name; the Database's endpoint is its name.
func desiredService(db *dbv1.Database) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: db.Name, Namespace: db.Namespace, Labels: childLabels(db)},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  selectorLabels(db),
			Ports: []corev1.ServicePort{{
				Name:     string(engine(db)),
				Port:     enginePort(engine(db)),
				Protocol: corev1.ProtocolTCP,
			}},
		},
	}
}

// desiredStatefulSet runs the engine's image. Its data volume is an emptyDir
// sized from spec.storage rather than a PersistentVolumeClaim: the embedded
// cluster has no storage provisioner, so a claim would stay Pending forever.
func desiredStatefulSet(db *dbv1.Database, registry string) *appsv1.StatefulSet {
	e := engine(db)
	size := storage(db)
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: db.Name, Namespace: db.Namespace, Labels: childLabels(db)},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(replicas(db)),
			ServiceName: db.Name,
			Selector:    &metav1.LabelSelector{MatchLabels: selectorLabels(db)},
			// Parallel: replicas of a learning database need no ordered start,
			// and scaling to zero on deletion drains every Pod at once.
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template: corev1.PodTemplateSpec{
				// The pods mode rides on the Pods, where kwok's stages read it.
				ObjectMeta: metav1.ObjectMeta{Labels: childLabels(db), Annotations: podTemplateAnnotations(db)},
				Spec: corev1.PodSpec{
					SecurityContext: podSecurity(),
					Containers: []corev1.Container{{
						Name:            string(e),
						Image:           image(db, registry),
						Ports:           []corev1.ContainerPort{{Name: string(e), ContainerPort: enginePort(e)}},
						Env:             engineEnv(db),
						SecurityContext: containerSecurity(),
						Resources:       podResources(),
						VolumeMounts: []corev1.VolumeMount{{
							Name: "data", MountPath: dataDir(e),
						}},
					}},
					Volumes: []corev1.Volume{{
						Name:         "data",
						VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &size}},
					}},
				},
			},
		},
	}
}

// engineUID is the user both engines' official images run as (postgres
// and mysql are uid 999 there): a Pod that must not run as root names it,
// and owns its data folder through fsGroup.
const engineUID = 999

// podSecurity and containerSecurity are what Pod Security "restricted"
// demands, which learner namespaces enforce: no root, no privilege
// escalation, no capabilities, the runtime's default seccomp profile. The
// Database's Pods comply so the lab works in a namespace a learner cannot
// use to run a privileged Pod.
func podSecurity() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To[int64](engineUID),
		RunAsGroup:     ptr.To[int64](engineUID),
		FSGroup:        ptr.To[int64](engineUID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// RestrictedSecurity is the Pod's and the container's security context of a
// Database's Pods, for any other workload oplab makes in a learner namespace,
// where Pod Security "restricted" refuses Pods without them.
func RestrictedSecurity() (*corev1.PodSecurityContext, *corev1.SecurityContext) {
	return podSecurity(), containerSecurity()
}

func containerSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// podResources are each replica's requests and limits: set, so that a
// namespace's quota on requests counts them and a learner's Pods are
// bounded on a real node.
func podResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
	}
}

func dataDir(e dbv1.Engine) string {
	if e == dbv1.EngineMySQL {
		return "/var/lib/mysql"
	}
	return "/var/lib/postgresql/data"
}

// engineEnv passes the generated password to the engine's entrypoint.
func engineEnv(db *dbv1.Database) []corev1.EnvVar {
	pw := &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: SecretName(db.Name)},
		Key:                  "password",
	}}
	if engine(db) == dbv1.EngineMySQL {
		return []corev1.EnvVar{{Name: "MYSQL_ROOT_PASSWORD", ValueFrom: pw}}
	}
	return []corev1.EnvVar{{Name: "POSTGRES_PASSWORD", ValueFrom: pw}}
}

// Each ensure function makes one child exist and match the spec, and says
// whether it created it. Only the fields the controller manages are
// compared: everything else (defaults the API server filled in, annotations
// other tools added) is left alone, or the controller would fight them
// forever.

// ensureSecret creates the credentials Secret. An existing Secret's data is
// never compared, only its labels: regenerating the password would break
// every client holding the old one.
func (r *DatabaseReconciler) ensureSecret(ctx context.Context, db *dbv1.Database) (created bool, err error) {
	desired := desiredSecret(db)
	if err := controllerutil.SetControllerReference(db, desired, r.Scheme); err != nil {
		return false, fmt.Errorf("setting owner of Secret %s: %w", desired.Name, err)
	}
	var actual corev1.Secret
	if created, err := r.getOrCreate(ctx, desired, &actual); err != nil || created {
		return created, err
	}
	adopt, err := checkOwner(db, &actual)
	if err != nil {
		return false, err
	}
	differences := diffLabels(&actual, desired)
	if len(differences) == 0 && !adopt {
		return false, nil
	}
	fixed := actual.DeepCopy()
	correctLabels(fixed, desired)
	return false, r.patchChild(ctx, db, &actual, fixed, adopt, differences)
}

// ensureService creates or corrects the headless Service.
func (r *DatabaseReconciler) ensureService(ctx context.Context, db *dbv1.Database) (created bool, err error) {
	desired := desiredService(db)
	if err := controllerutil.SetControllerReference(db, desired, r.Scheme); err != nil {
		return false, fmt.Errorf("setting owner of Service %s: %w", desired.Name, err)
	}
	var actual corev1.Service
	if created, err := r.getOrCreate(ctx, desired, &actual); err != nil || created {
		return created, err
	}
	adopt, err := checkOwner(db, &actual)
	if err != nil {
		return false, err
	}
	differences := diffService(&actual, desired)
	if len(differences) == 0 && !adopt {
		return false, nil
	}
	fixed := actual.DeepCopy()
	correctService(fixed, desired)
	return false, r.patchChild(ctx, db, &actual, fixed, adopt, differences)
}

// ensureStatefulSet creates or corrects the StatefulSet and returns it as
// last read or written: its status says how many replicas are ready.
func (r *DatabaseReconciler) ensureStatefulSet(ctx context.Context, db *dbv1.Database) (sts *appsv1.StatefulSet, created bool, err error) {
	desired := desiredStatefulSet(db, r.ImageRegistry)
	if err := controllerutil.SetControllerReference(db, desired, r.Scheme); err != nil {
		return nil, false, fmt.Errorf("setting owner of StatefulSet %s: %w", desired.Name, err)
	}
	var actual appsv1.StatefulSet
	created, err = r.getOrCreate(ctx, desired, &actual)
	if err != nil {
		return nil, false, err
	}
	if created {
		return desired, true, nil
	}
	adopt, err := checkOwner(db, &actual)
	if err != nil {
		return nil, false, err
	}
	differences := diffStatefulSet(&actual, desired)
	if len(differences) == 0 && !adopt {
		return &actual, false, nil
	}
	fixed := actual.DeepCopy()
	correctStatefulSet(fixed, desired)
	if err := r.patchChild(ctx, db, &actual, fixed, adopt, differences); err != nil {
		return nil, false, err
	}
	return fixed, false, nil
}

// diffLabels reports our labels that are missing or changed; labels others
// added are not ours to remove.
func diffLabels(actual, desired client.Object) []string {
	var out []string
	have := actual.GetLabels()
	for _, k := range slices.Sorted(maps.Keys(desired.GetLabels())) {
		want := desired.GetLabels()[k]
		got, ok := have[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("label %s missing", k))
		case got != want:
			out = append(out, fmt.Sprintf("label %s %q → %q", k, got, want))
		}
	}
	return out
}

func correctLabels(actual, desired client.Object) {
	labels := actual.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, desired.GetLabels())
	actual.SetLabels(labels)
}

func diffService(actual, desired *corev1.Service) []string {
	out := diffLabels(actual, desired)
	if !maps.Equal(actual.Spec.Selector, desired.Spec.Selector) {
		out = append(out, fmt.Sprintf("selector %v → %v", actual.Spec.Selector, desired.Spec.Selector))
	}
	if got, want := portsOf(actual.Spec.Ports), portsOf(desired.Spec.Ports); !slices.Equal(got, want) {
		out = append(out, fmt.Sprintf("ports %v → %v", got, want))
	}
	return out
}

func portsOf(ports []corev1.ServicePort) []string {
	out := make([]string, 0, len(ports))
	for _, p := range ports {
		out = append(out, fmt.Sprintf("%s:%d", p.Name, p.Port))
	}
	return out
}

func correctService(actual, desired *corev1.Service) {
	correctLabels(actual, desired)
	actual.Spec.Selector = desired.Spec.Selector
	actual.Spec.Ports = desired.Spec.Ports
}

func diffStatefulSet(actual, desired *appsv1.StatefulSet) []string {
	out := diffLabels(actual, desired)
	if got, want := ptr.Deref(actual.Spec.Replicas, 1), ptr.Deref(desired.Spec.Replicas, 1); got != want {
		out = append(out, fmt.Sprintf("replicas %d → %d", got, want))
	}
	if got, want := containerImage(actual), containerImage(desired); got != want {
		out = append(out, fmt.Sprintf("image %s → %s", got, want))
	}
	if got, want := dataSize(actual), dataSize(desired); got != want {
		out = append(out, fmt.Sprintf("storage %s → %s", got, want))
	}
	if !sameSecurity(actual, desired) {
		out = append(out, "pod security context and resources")
	}
	if got, want := templatePodsMode(actual), templatePodsMode(desired); got != want {
		out = append(out, fmt.Sprintf("pods %s → %s", orDefault(got), orDefault(want)))
	}
	return out
}

// orDefault names the absence of a pods mode in a difference.
func orDefault(mode string) string {
	if mode == "" {
		return "default"
	}
	return mode
}

// sameSecurity reports whether actual's Pods run as restricted as
// desired's: a template from before they did (or changed by an admin) is
// put back.
func sameSecurity(actual, desired *appsv1.StatefulSet) bool {
	a, d := actual.Spec.Template.Spec, desired.Spec.Template.Spec
	if len(a.Containers) == 0 || len(d.Containers) == 0 {
		return len(a.Containers) == len(d.Containers)
	}
	return equality.Semantic.DeepEqual(a.SecurityContext, d.SecurityContext) &&
		equality.Semantic.DeepEqual(a.Containers[0].SecurityContext, d.Containers[0].SecurityContext) &&
		equality.Semantic.DeepEqual(a.Containers[0].Resources, d.Containers[0].Resources)
}

// containerImage is the image of the first container: the engine's.
func containerImage(s *appsv1.StatefulSet) string {
	if len(s.Spec.Template.Spec.Containers) == 0 {
		return "(none)"
	}
	return s.Spec.Template.Spec.Containers[0].Image
}

func dataSize(s *appsv1.StatefulSet) string {
	for _, v := range s.Spec.Template.Spec.Volumes {
		if v.Name == "data" && v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil {
			return v.EmptyDir.SizeLimit.String()
		}
	}
	return "(none)"
}

// correctStatefulSet puts back the managed fields. The pod template is
// replaced only when it differs, so a replica change alone does not restart
// Pods.
func correctStatefulSet(actual, desired *appsv1.StatefulSet) {
	correctLabels(actual, desired)
	actual.Spec.Replicas = desired.Spec.Replicas
	if containerImage(actual) != containerImage(desired) || dataSize(actual) != dataSize(desired) || !sameSecurity(actual, desired) ||
		templatePodsMode(actual) != templatePodsMode(desired) {
		actual.Spec.Template = desired.Spec.Template
	}
}
