package viewers

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// artifactsDir is where the benchmark's cluster log goes: $OPLAB_ARTIFACTS,
// or a folder in the temp dir. Never in the source tree.
func artifactsDir() string {
	dir := os.Getenv("OPLAB_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "oplab-artifacts")
	}
	dir = filepath.Join(dir, "loadtest-viewers")
	_ = os.MkdirAll(dir, 0o755)
	return dir
}

// testLogger writes the server's logs to the cluster log file, so the
// benchmark's output stays its figures.
func testLogger(w *os.File) logr.Logger {
	return funcr.New(func(prefix, args string) { fmt.Fprintln(w, prefix, args) }, funcr.Options{Verbosity: 1})
}

func mustScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := dbv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}
