package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The API server's identity lives in the data folder, beside etcd's data:
//
//	<data dir>/apiserver/port       the secure port it served on last
//	<data dir>/apiserver/serving-ca.{crt,key}  the CA of its serving certificate
//	<data dir>/apiserver/client-ca.{crt,key}   the CA of the client certificates
//
// so that a kubeconfig written before a restart (a learner's, with its
// token, or the admin's, with its client certificate) names the same port
// and trusts the same CA after it. The serving certificate itself is made
// afresh from the kept CA at every start, so it never expires under a long
// running class.
const (
	servingDir     = "apiserver"
	servingPort    = "port"
	servingCAName  = "serving-ca"
	clientCAName   = "client-ca"
	caLifetimeYear = 10
)

// servingState is the API server identity a start found or made.
type servingState struct {
	Port int
	// MovedFrom is the port the data folder's last API server served on,
	// when something else holds it now and this start had to take another:
	// every kubeconfig written before names the old one.
	MovedFrom int
	// kept is whether Port came from the data folder, where kubeconfigs
	// written before may name it.
	kept      bool
	portFile  string
	pick      func() (int, error) // a port for a new data folder's API server, or a moved one's
	servingCA *keyedCert
	clientCA  *keyedCert
}

// keyedCert is a CA certificate and its key.
type keyedCert struct {
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey
}

// loadServing reads the API server's identity from data, making what is
// missing. A kept port that something else now listens on is replaced (and
// the new one kept) and reported in MovedFrom. pick hands out a new port.
func loadServing(data string, pick func() (int, error)) (*servingState, error) {
	dir := filepath.Join(data, servingDir)
	if err := os.MkdirAll(dir, dataDirPermission); err != nil {
		return nil, fmt.Errorf("creating the API server's folder: %w", err)
	}
	s := &servingState{pick: pick}
	var err error
	if s.servingCA, err = loadOrMakeCA(dir, servingCAName, "oplab kube-apiserver serving CA"); err != nil {
		return nil, err
	}
	if s.clientCA, err = loadOrMakeCA(dir, clientCAName, "oplab kube-apiserver client CA"); err != nil {
		return nil, err
	}
	portFile := filepath.Join(dir, servingPort)
	s.portFile = portFile
	if raw, err := os.ReadFile(portFile); err == nil {
		old, perr := strconv.Atoi(strings.TrimSpace(string(raw)))
		if perr != nil || old <= 0 || old > 65535 {
			return nil, fmt.Errorf("reading the API server's port from %s: %q is not a port (remove the file to pick a new one)", portFile, strings.TrimSpace(string(raw)))
		}
		if portFree(old) {
			s.Port, s.kept = old, true
			return s, nil
		}
		s.MovedFrom = old
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading the API server's port: %w", err)
	}
	if err := s.takeFreePort(); err != nil {
		return nil, err
	}
	return s, nil
}

// takeFreePort moves the API server to a free port and keeps it in the data
// folder. A port the folder kept before is named in MovedFrom.
func (s *servingState) takeFreePort() error {
	if s.kept && s.MovedFrom == 0 {
		s.MovedFrom = s.Port
	}
	port, err := s.pick()
	if err != nil {
		return err
	}
	if err := os.WriteFile(s.portFile, []byte(strconv.Itoa(port)+"\n"), 0o600); err != nil {
		return fmt.Errorf("keeping the API server's port: %w", err)
	}
	s.Port, s.kept = port, false
	return nil
}

// portFree reports whether the loopback port can be bound right now.
func portFree(port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// loadOrMakeCA reads dir/name.crt and dir/name.key, or makes and writes a
// new CA when either is missing or the certificate is within a month of
// expiring (kubeconfigs trusting it break then, once in ten years).
func loadOrMakeCA(dir, name, cn string) (*keyedCert, error) {
	certPath, keyPath := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if ca, err := readCA(certPath, keyPath); err == nil && time.Until(ca.cert.NotAfter) > 30*24*time.Hour {
		return ca, nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	tmpl := certTemplate(cn)
	tmpl.NotAfter = time.Now().AddDate(caLifetimeYear, 0, 0)
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(randReader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("signing the %s: %w", cn, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding the key of the %s: %w", cn, err)
	}
	// The key first: a crash between the two leaves a key without its
	// certificate, which the next start replaces.
	if err := writePEM(keyPath, "PRIVATE KEY", keyDER); err != nil {
		return nil, err
	}
	if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
		return nil, err
	}
	return readCA(certPath, keyPath)
}

// readCA parses a kept CA; a missing file reads as os.ErrNotExist.
func readCA(certPath, keyPath string) (*keyedCert, error) {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		if _, serr := os.Stat(certPath); errors.Is(serr, os.ErrNotExist) {
			return nil, serr
		}
		if _, serr := os.Stat(keyPath); errors.Is(serr, os.ErrNotExist) {
			return nil, serr
		}
		return nil, fmt.Errorf("reading the CA %s: %w (remove it and its key to make a new one; kubeconfigs written before stop working)", certPath, err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("reading the CA %s: its key is not ECDSA", certPath)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("reading the CA %s: %w", certPath, err)
	}
	return &keyedCert{cert: cert, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), key: key}, nil
}

// randReader is where keys and serials come from.
var randReader = rand.Reader

// newKey makes a P-256 key, as every other key of the cluster.
func newKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), randReader)
	if err != nil {
		return nil, fmt.Errorf("generating a key: %w", err)
	}
	return key, nil
}

// writeServingCert issues the API server's serving certificate from the
// kept CA into certDir, under the names envtest looks for: finding them,
// envtest makes no CA of its own.
func (s *servingState) writeServingCert(certDir string) error {
	tmpl := certTemplate("kube-apiserver")
	tmpl.DNSNames = []string{"localhost"}
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	return issue(tmpl, s.servingCA.cert, s.servingCA.key, filepath.Join(certDir, "apiserver.crt"), filepath.Join(certDir, "apiserver.key"))
}

// keptAuthn is envtest's client-certificate authentication with the data
// folder's CA rather than a new one per start, so the admin kubeconfig (and
// every other client certificate) written before a restart still works.
type keptAuthn struct {
	ca     *keyedCert
	caPath string
}

var _ envtest.Authn = (*keptAuthn)(nil)

func (a *keptAuthn) Configure(workDir string, args *envtest.Arguments) error {
	a.caPath = filepath.Join(workDir, "client-cert-auth-ca.crt")
	args.Set("client-ca-file", a.caPath)
	return nil
}

func (a *keptAuthn) Start() error {
	if a.caPath == "" {
		return errors.New("client authentication started before it was configured")
	}
	if err := os.WriteFile(a.caPath, a.ca.certPEM, 0o600); err != nil {
		return fmt.Errorf("writing the client CA for kube-apiserver: %w", err)
	}
	return nil
}

// AddUser signs a client certificate for user, its groups as organizations
// (as the API server reads them).
func (a *keptAuthn) AddUser(user envtest.User, base *rest.Config) (*rest.Config, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	tmpl := certTemplate(user.Name)
	tmpl.Subject.Organization = user.Groups
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	der, err := x509.CreateCertificate(randReader, tmpl, a.ca.cert, &key.PublicKey, a.ca.key)
	if err != nil {
		return nil, fmt.Errorf("signing a client certificate for %s: %w", user.Name, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding the key of %s: %w", user.Name, err)
	}
	cfg := rest.CopyConfig(base)
	cfg.CertData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	cfg.KeyData = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	return cfg, nil
}

func (a *keptAuthn) Stop() error { return nil }
