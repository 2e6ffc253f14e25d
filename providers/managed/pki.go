package managed

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"sealion.dev/core/certauthority"
)

// certLifetime outlives any test or demo; the CAs die with the cluster's state folder.
const certLifetime = 365 * 24 * time.Hour

// proxyClientName is the common name the aggregator presents to aggregated API servers such as
// the Concierge; --requestheader-allowed-names lists it.
const proxyClientName = "front-proxy-client"

// Files in the pki folder.
const (
	caCertFile            = "ca.crt"
	caKeyFile             = "ca.key"
	frontProxyCACertFile  = "front-proxy-ca.crt"
	apiserverCertFile     = "apiserver.crt"
	apiserverKeyFile      = "apiserver.key"
	kubeletClientCertFile = "apiserver-kubelet-client.crt"
	kubeletClientKeyFile  = "apiserver-kubelet-client.key"
	proxyClientCertFile   = "front-proxy-client.crt"
	proxyClientKeyFile    = "front-proxy-client.key"
	saPublicKeyFile       = "sa.pub"
	saPrivateKeyFile      = "sa.key"
)

// clientIdentity is a component that talks to the API server with a client certificate, through
// a kubeconfig named after the component.
type clientIdentity struct {
	component string
	user      string
	groups    []string
}

// clientIdentities are the kubeconfigs writePKI creates. The node authenticates with a
// certificate we sign (system:node:<name> in system:nodes), so the Node authorizer and
// NodeRestriction treat it as they would a kubelet that went through TLS bootstrap.
func clientIdentities(nodeName string) []clientIdentity {
	return []clientIdentity{
		{component: "admin", user: "sealion-managed-admin", groups: []string{"system:masters"}},
		{component: "kube-controller-manager", user: "system:kube-controller-manager"},
		{component: "kube-scheduler", user: "system:kube-scheduler"},
		{component: "kubelet", user: "system:node:" + nodeName, groups: []string{"system:nodes"}},
		{component: "kube-proxy", user: "system:kube-proxy"},
	}
}

// apiserverSANs are the names and addresses clients use for the API server: the host address
// (kubeconfigs, the kubernetes Service's endpoint), the Service's cluster IP and in-cluster names.
func apiserverSANs(hostIP net.IP) ([]string, []net.IP) {
	return []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc." + clusterDomain},
		[]net.IP{hostIP, net.ParseIP(kubernetesServiceIP), net.IPv4(127, 0, 0, 1)}
}

// writePKI creates the cluster CA, the front-proxy CA, every certificate and the kubeconfigs.
func writePKI(l layout, hostIP net.IP, nodeName, server string) error {
	if err := os.MkdirAll(l.pkiDir(), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", l.pkiDir(), err)
	}
	ca, err := certauthority.New("sealion-managed-cluster-ca", certLifetime)
	if err != nil {
		return err
	}
	frontProxyCA, err := certauthority.New("sealion-managed-front-proxy-ca", certLifetime)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		caCertFile:           ca.Bundle(),
		caKeyFile:            ca.PrivateKeyPEM(),
		frontProxyCACertFile: frontProxyCA.Bundle(),
	}
	dnsNames, ips := apiserverSANs(hostIP)
	if files[apiserverCertFile], files[apiserverKeyFile], err = ca.IssueServingCert("kube-apiserver", dnsNames, ips, certLifetime); err != nil {
		return err
	}
	if files[kubeletClientCertFile], files[kubeletClientKeyFile], _, err = ca.IssueClientCert("kube-apiserver-kubelet-client", []string{"system:masters"}, nil, certLifetime); err != nil {
		return err
	}
	if files[proxyClientCertFile], files[proxyClientKeyFile], _, err = frontProxyCA.IssueClientCert(proxyClientName, nil, nil, certLifetime); err != nil {
		return err
	}
	if files[saPublicKeyFile], files[saPrivateKeyFile], err = serviceAccountKeys(); err != nil {
		return err
	}
	for name, data := range files {
		if err := os.WriteFile(l.pkiFile(name), data, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	for _, id := range clientIdentities(nodeName) {
		certPEM, keyPEM, _, err := ca.IssueClientCert(id.user, id.groups, nil, certLifetime)
		if err != nil {
			return err
		}
		cfg := kubeconfig(server, ca.Bundle(), id.user, certPEM, keyPEM)
		if err := clientcmd.WriteToFile(*cfg, l.kubeconfigFile(id.component)); err != nil {
			return fmt.Errorf("writing the kubeconfig of %s: %w", id.component, err)
		}
	}
	return nil
}

// kubeconfig is a kubeconfig with one context, credentials embedded.
func kubeconfig(server string, caPEM []byte, user string, certPEM, keyPEM []byte) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["default"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: user}
	cfg.CurrentContext = "default"
	return cfg
}

// serviceAccountKeys returns an RSA key pair for service account tokens: RS256 is the default
// algorithm of the token issuer and what OIDC discovery clients expect.
func serviceAccountKeys() (publicPEM, privatePEM []byte, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the service account key: %w", err)
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the service account key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the service account public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}), nil
}
