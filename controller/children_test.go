package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

func specDB(engine dbv1.Engine, version string, replicas int32, storage string) *dbv1.Database {
	db := &dbv1.Database{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "learner"},
		Spec:       dbv1.DatabaseSpec{Engine: engine, Version: version, Replicas: replicas},
	}
	if storage != "" {
		db.Spec.Storage = resource.MustParse(storage)
	}
	return db
}

func TestDesiredStatefulSet(t *testing.T) {
	tests := []struct {
		name               string
		db                 *dbv1.Database
		image, mount, size string
		replicas, port     int32
		passwordEnv        string
	}{
		{"defaults", specDB("", "", 0, ""), "postgres:17", "/var/lib/postgresql/data", "1Gi", 1, 5432, "POSTGRES_PASSWORD"},
		{"postgres pinned", specDB(dbv1.EnginePostgres, "16.4", 3, "5Gi"), "postgres:16.4", "/var/lib/postgresql/data", "5Gi", 3, 5432, "POSTGRES_PASSWORD"},
		{"mysql default version", specDB(dbv1.EngineMySQL, "", 2, "512Mi"), "mysql:8.4", "/var/lib/mysql", "512Mi", 2, 3306, "MYSQL_ROOT_PASSWORD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := desiredStatefulSet(tt.db, "")
			c := s.Spec.Template.Spec.Containers[0]
			got := []any{c.Image, c.VolumeMounts[0].MountPath, dataSize(s), *s.Spec.Replicas, c.Ports[0].ContainerPort, c.Env[0].Name}
			want := []any{tt.image, tt.mount, tt.size, tt.replicas, tt.port, tt.passwordEnv}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("statefulset (-want +got):\n%s", d)
			}
			if s.Spec.ServiceName != "orders" || s.Spec.Selector.MatchLabels[LabelDatabase] != "orders" {
				t.Errorf("serviceName %q selector %v: want the Database's name", s.Spec.ServiceName, s.Spec.Selector.MatchLabels)
			}
			if s.Spec.Template.Spec.Volumes[0].EmptyDir == nil {
				t.Error("data volume is not an emptyDir: the embedded cluster has no storage provisioner")
			}
		})
	}
}

func TestDesiredServiceIsHeadless(t *testing.T) {
	svc := desiredService(specDB(dbv1.EngineMySQL, "", 1, ""))
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("clusterIP = %q, want None", svc.Spec.ClusterIP)
	}
	if got := portsOf(svc.Spec.Ports); !cmp.Equal(got, []string{"mysql:3306"}) {
		t.Errorf("ports = %v, want [mysql:3306]", got)
	}
	if got := Endpoint(specDB(dbv1.EngineMySQL, "", 1, "")); got != "orders.learner.svc:3306" {
		t.Errorf("endpoint = %q", got)
	}
}

func TestDesiredSecretGeneratesFreshPasswords(t *testing.T) {
	db := specDB("", "", 1, "")
	a, b := desiredSecret(db), desiredSecret(db)
	if a.StringData["password"] == "" || a.StringData["password"] == b.StringData["password"] {
		t.Errorf("passwords %q and %q: want non-empty and different", a.StringData["password"], b.StringData["password"])
	}
}

func TestDiffStatefulSet(t *testing.T) {
	desired := desiredStatefulSet(specDB(dbv1.EnginePostgres, "17", 3, "2Gi"), "")
	tests := []struct {
		name   string
		mutate func(s *appsv1.StatefulSet)
		want   []string
	}{
		{"in sync", func(*appsv1.StatefulSet) {}, nil},
		{"server defaults are ignored", func(s *appsv1.StatefulSet) {
			s.Spec.RevisionHistoryLimit = ptr.To[int32](10)
			s.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
			s.Labels["extra"] = "kept"
		}, nil},
		{"replicas changed by hand", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) }, []string{"replicas 1 → 3"}},
		{"image", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "postgres:16" }, []string{"image postgres:16 → postgres:17"}},
		{"storage", func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Volumes[0].EmptyDir.SizeLimit = ptr.To(resource.MustParse("1Gi"))
		}, []string{"storage 1Gi → 2Gi"}},
		{"label removed", func(s *appsv1.StatefulSet) { delete(s.Labels, labelManagedBy) }, []string{"label app.kubernetes.io/managed-by missing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			actual := desired.DeepCopy()
			tt.mutate(actual)
			if d := cmp.Diff(tt.want, diffStatefulSet(actual, desired)); d != "" {
				t.Fatalf("diff (-want +got):\n%s", d)
			}
			correctStatefulSet(actual, desired)
			if got := diffStatefulSet(actual, desired); len(got) != 0 {
				t.Errorf("after correct, still differs: %v", got)
			}
		})
	}
}

func TestCorrectStatefulSetKeepsTemplateOnReplicaChange(t *testing.T) {
	desired := desiredStatefulSet(specDB(dbv1.EnginePostgres, "17", 3, ""), "")
	actual := desired.DeepCopy()
	actual.Spec.Replicas = ptr.To[int32](1)
	actual.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways // a server default
	correctStatefulSet(actual, desired)
	if actual.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Error("a replica change replaced the pod template, which would restart every Pod")
	}
}

func TestDiffService(t *testing.T) {
	desired := desiredService(specDB(dbv1.EnginePostgres, "", 1, ""))
	actual := desired.DeepCopy()
	actual.Spec.Ports[0].Port = 6543
	actual.Spec.Selector = map[string]string{"app": "other"}
	want := []string{"selector map[app:other] → map[db.oplab.dev/database:orders]", "ports [postgres:6543] → [postgres:5432]"}
	if d := cmp.Diff(want, diffService(actual, desired)); d != "" {
		t.Errorf("diff (-want +got):\n%s", d)
	}
	correctService(actual, desired)
	if got := diffService(actual, desired); len(got) != 0 {
		t.Errorf("after correct, still differs: %v", got)
	}
}

func TestNames(t *testing.T) {
	if got := SnapshotName("orders"); got != "orders-final-snapshot" {
		t.Errorf("SnapshotName = %q", got)
	}
	if got := SecretName("orders"); got != "orders-credentials" {
		t.Errorf("SecretName = %q", got)
	}
}

// TestDesiredStatefulSetFromAMirror names the engine's image in the
// registry given, so a cluster that pulls only from a mirror works.
func TestDesiredStatefulSetFromAMirror(t *testing.T) {
	for registry, want := range map[string]string{
		"":                             "postgres:16.4",
		"mirror.example.com/library":   "mirror.example.com/library/postgres:16.4",
		"mirror.example.com:5000/hub/": "mirror.example.com:5000/hub/postgres:16.4",
	} {
		s := desiredStatefulSet(specDB(dbv1.EnginePostgres, "16.4", 1, ""), registry)
		if got := s.Spec.Template.Spec.Containers[0].Image; got != want {
			t.Errorf("registry %q: image %q, want %q", registry, got, want)
		}
	}
}
