package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// The data folder is what an embedded cluster keeps between runs:
//
//	<data dir>/lock                 held (flock) by the oplab using the folder
//	<data dir>/etcd/                etcd's data: every object of the cluster
//	<data dir>/service-account.key  kube-apiserver's token signing key, so
//	<data dir>/service-account.pub  tokens it issued stay valid after a restart
//	<data dir>/apiserver/           kube-apiserver's port and the CAs of its
//	                                serving and client certificates, so
//	                                kubeconfigs written before a restart
//	                                still work after it (see serving.go)
//
// Everything else (etcd's certificates, kubeconfigs, wrapper scripts) is
// made afresh at every start in the cluster's runtime dir and removed at
// Stop.
const (
	lockFile          = "lock"
	etcdDataDir       = "etcd"
	saKeyFile         = "service-account.key"
	saPubFile         = "service-account.pub"
	saIssuer          = "https://kubernetes.default.svc.cluster.local"
	dataDirPermission = 0o700
)

// DefaultDataDir is where the embedded cluster keeps its data by default:
// ${XDG_DATA_HOME:-~/.local/share}/oplab/data/<Kubernetes version>, beside
// the k8s folder of binaries (see DefaultAssetsDir). The version is in the
// name because etcd's data is only promised to work with the versions it
// was written by: a new pin starts from an empty cluster and leaves the old
// data where it was.
func DefaultDataDir() (string, error) {
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("locating the data folder: %w", err)
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "oplab", "data", KubernetesVersion), nil
}

// ErrDataDirInUse is returned by Start when another process holds the data
// folder: two etcds on one data dir would corrupt it.
var ErrDataDirInUse = errors.New("data folder in use by another oplab")

// lockDataDir creates dir if needed and takes an exclusive lock on its lock
// file, which it keeps until the returned file is closed. The lock is a
// flock, which the kernel drops when the holder dies however it dies, so a
// killed oplab never leaves a stale lock behind.
func lockDataDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, dataDirPermission); err != nil {
		return nil, fmt.Errorf("creating the data folder: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the data folder's lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(f.Name())
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := "another process"
			if pid, err := strconv.Atoi(strings.TrimSpace(string(holder))); err == nil {
				who = fmt.Sprintf("oplab pid %d", pid)
			}
			return nil, fmt.Errorf("%w: %s holds %s (stop it, or give this one --data-dir elsewhere or --ephemeral)", ErrDataDirInUse, who, dir)
		}
		return nil, fmt.Errorf("locking the data folder %s: %w", dir, err)
	}
	// The pid is only there for the message above.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// serviceAccountKeys returns the paths of the token signing key pair in dir,
// generating it on first use.
func serviceAccountKeys(dir string) (key, pub string, err error) {
	key, pub = filepath.Join(dir, saKeyFile), filepath.Join(dir, saPubFile)
	_, kerr := os.Stat(key)
	_, perr := os.Stat(pub)
	if kerr == nil && perr == nil {
		return key, pub, nil
	}
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("generating the service account key: %w", err)
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return "", "", fmt.Errorf("encoding the service account key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		return "", "", fmt.Errorf("encoding the service account key: %w", err)
	}
	// Half a pair left by a crash here is replaced next time: the check
	// above wants both files.
	if err := writePEM(pub, "PUBLIC KEY", pubDER); err != nil {
		return "", "", err
	}
	if err := writePEM(key, "PRIVATE KEY", privDER); err != nil {
		return "", "", err
	}
	return key, pub, nil
}
