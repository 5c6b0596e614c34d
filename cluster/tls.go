package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// etcdTLS is the file set that closes etcd to everyone but kube-apiserver:
// etcd serves its client and peer ports over TLS and accepts only clients
// whose certificate the cluster's own CA signed. Without it any local user
// could read every Secret straight out of etcd's loopback port, whatever the
// kubeconfig's file mode.
type etcdTLS struct {
	CA         string // the CA certificate both sides trust
	ServerCert string // etcd's serving (and peer) certificate
	ServerKey  string
	ClientCert string // kube-apiserver's client certificate
	ClientKey  string
}

// newEtcdTLS generates a CA, etcd's certificate and kube-apiserver's client
// certificate into dir (mode 0700, files 0600). A fresh set at every start
// rather than one kept in the data folder: nothing else ever needs them, a
// key copied once is useless after the next start, and ECDSA keys take
// microseconds to make.
func newEtcdTLS(dir string) (etcdTLS, error) {
	files := etcdTLS{
		CA:         filepath.Join(dir, "ca.crt"),
		ServerCert: filepath.Join(dir, "etcd.crt"),
		ServerKey:  filepath.Join(dir, "etcd.key"),
		ClientCert: filepath.Join(dir, "apiserver-etcd-client.crt"),
		ClientKey:  filepath.Join(dir, "apiserver-etcd-client.key"),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return files, fmt.Errorf("creating etcd's TLS dir: %w", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return files, fmt.Errorf("generating etcd's CA key: %w", err)
	}
	caTmpl := certTemplate("oplab etcd CA")
	caTmpl.IsCA = true
	caTmpl.BasicConstraintsValid = true
	caTmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return files, fmt.Errorf("signing etcd's CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return files, fmt.Errorf("parsing etcd's CA: %w", err)
	}
	if err := writePEM(files.CA, "CERTIFICATE", caDER); err != nil {
		return files, err
	}

	// etcd's certificate serves the client port and, as etcd presents it
	// to its own peer port too, must also be a client certificate.
	server := certTemplate("etcd")
	server.DNSNames = []string{"localhost"}
	server.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	server.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	if err := issue(server, caCert, caKey, files.ServerCert, files.ServerKey); err != nil {
		return files, err
	}
	client := certTemplate("kube-apiserver-etcd-client")
	client.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if err := issue(client, caCert, caKey, files.ClientCert, files.ClientKey); err != nil {
		return files, err
	}
	return files, nil
}

// certTemplate is a certificate valid for a year, with a random serial.
func certTemplate(cn string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"oplab"}},
		NotBefore:    now.Add(-time.Hour), // tolerate a clock a little behind
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
}

// issue signs tmpl with the CA and writes the certificate and a new key.
func issue(tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey, certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating a key for %s: %w", tmpl.Subject.CommonName, err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("signing a certificate for %s: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding the key of %s: %w", tmpl.Subject.CommonName, err)
	}
	if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
		return err
	}
	return writePEM(keyPath, "PRIVATE KEY", keyDER)
}

// writePEM writes one PEM block, readable by this user only.
func writePEM(path, blockType string, der []byte) error {
	data := pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	return nil
}

// freePort asks the kernel for a loopback port nobody uses right now. As with
// envtest's own ports, another process could take it before etcd binds it;
// on loopback, in practice, nobody does.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
