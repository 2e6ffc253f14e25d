package csrsigner

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"sealion.dev/core/certauthority"
	"sealion.dev/core/testing/controlplane"
	"sealion.dev/core/testing/loadrun"
)

var (
	load         = flag.Bool("load", false, "measure the issuance rate through a real kube-controller-manager against the in-process CA's (make bench)")
	loadDuration = flag.Duration("load-duration", 5*time.Second, "how long each load step runs")
)

// TestIssueRate measures what the CertificateSigningRequest strategy costs: certificates issued
// per second through the CSR API and a real kube-controller-manager, against the in-process CA
// the other strategies sign with (the cluster's key for the kube cert agent, the proxy's own),
// at 1, 16 and 64 concurrent exchanges, as benchmark lines for tools/bench. The rest of an
// exchange (the authenticator, the aggregation layer) is the same for every strategy and is
// measured by the Concierge's TestLoad. It fails only if an issuance fails.
func TestIssueRate(t *testing.T) {
	if !*load {
		t.Skip("load run is opt-in: go test -load (make bench runs it)")
	}
	cp := controlplane.StartForTest(t, controlplane.Options{ControllerManager: true})
	csr := &Issuer{Client: unthrottled(t, cp.RESTConfig())}
	ca, err := certauthority.New("cluster CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	inProcess := func(context.Context, int) error {
		_, _, _, err := ca.IssueClientCert("pinny", []string{"seals"}, nil, 5*time.Minute)
		return err
	}
	viaCSR := func(ctx context.Context, _ int) error {
		_, _, _, err := csr.IssueClientCert(ctx, "pinny", []string{"seals"}, nil, 0)
		return err
	}
	loadrun.WriteUnits(os.Stdout)
	for _, clients := range []int{1, 16, 64} {
		local := loadrun.Closed(clients, *loadDuration, inProcess)
		loadrun.Write(os.Stdout, fmt.Sprintf("IssueClientCert/signer=in-process/clients=%d", clients), local.Figures()...)
		remote := loadrun.Closed(clients, *loadDuration, viaCSR)
		loadrun.Write(os.Stdout, fmt.Sprintf("IssueClientCert/signer=CertificateSigningRequest/clients=%d", clients), remote.Figures()...)
		loadrun.Write(os.Stdout, fmt.Sprintf("CertificateSigningRequestOverInProcess/clients=%d", clients), loadrun.Figure{Value: remote.Rate / local.Rate, Unit: loadrun.Ratio})
		for what, r := range map[string]loadrun.Result{"in-process": local, "CertificateSigningRequest": remote} {
			if len(r.Failures) > 0 || r.Count == 0 {
				t.Errorf("%s with %d clients: %d succeeded, %d failed: %v", what, clients, r.Count, len(r.Failures), r.Failures)
			}
		}
	}
}

// TestKubeControllerManagerSigns issues through a real kube-apiserver and kube-controller-manager:
// the certificate is the cluster CA's, lives the ten minutes asked, names the user and groups, and
// the API server authenticates its holder as that user; the request is gone after.
func TestKubeControllerManagerSigns(t *testing.T) {
	cp := controlplane.StartForTest(t, controlplane.Options{ControllerManager: true})
	client := unthrottled(t, cp.RESTConfig())
	issuer := &Issuer{Client: client}
	ctx := context.Background()

	certPEM, keyPEM, notAfter, err := issuer.IssueClientCert(ctx, "pinny", []string{"seals", "walruses"}, nil, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatal("no PEM certificate")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(cp.ClientCACertFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the certificate is not the cluster CA's for client authentication: %v", err)
	}
	if leaf.Subject.CommonName != "pinny" || !slices.Equal(leaf.Subject.Organization, []string{"seals", "walruses"}) {
		t.Errorf("subject %v", leaf.Subject)
	}
	// kube-controller-manager backdates NotBefore for clock skew; NotAfter is what counts.
	if left := time.Until(leaf.NotAfter); left > ExpirationSeconds*time.Second+time.Minute || left < ExpirationSeconds*time.Second-time.Minute {
		t.Errorf("the certificate expires in %s, want the %d seconds asked", left, ExpirationSeconds)
	}
	if !notAfter.Equal(leaf.NotAfter) {
		t.Errorf("notAfter %s, certificate's %s", notAfter, leaf.NotAfter)
	}

	holder := rest.AnonymousClientConfig(cp.RESTConfig())
	holder.CertData, holder.KeyData = certPEM, keyPEM
	review, err := kubernetes.NewForConfigOrDie(holder).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("authenticating with the certificate: %v", err)
	}
	if u := review.Status.UserInfo; u.Username != "pinny" || !slices.Contains(u.Groups, "seals") {
		t.Errorf("the API server sees %+v", u)
	}
	requireNoRequests(t, client)
}

// TestSignerNotServed: where kube-controller-manager signs for the other built-in signers but not
// kubernetes.io/kube-apiserver-client (as on EKS), the approved request is never issued; the
// issuer says so once its wait is over, and deletes the request.
func TestSignerNotServed(t *testing.T) {
	cp := controlplane.StartForTest(t, controlplane.Options{ControllerManager: true, Signers: []string{"kubelet-serving", "kubelet-client", "legacy-unknown"}})
	client := unthrottled(t, cp.RESTConfig())
	issuer := &Issuer{Client: client, Timeout: 3 * time.Second}
	_, _, _, err := issuer.IssueClientCert(context.Background(), "pinny", nil, nil, 0)
	if !errors.Is(err, ErrNotIssued) {
		t.Fatalf("got %v, want ErrNotIssued", err)
	}
	requireNoRequests(t, client)
}

func unthrottled(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cfg.QPS = -1
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func requireNoRequests(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	list, err := client.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{LabelSelector: Label})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("%d requests left behind, want none", len(list.Items))
	}
}
