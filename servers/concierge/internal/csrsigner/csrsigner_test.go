package csrsigner

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes/fake"
	kubetesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

const concierge = "system:serviceaccount:pinniped-concierge:pinniped-concierge"

// cluster is a fake API server with a kube-apiserver-client signer: it names created requests and
// records their requestor (requestor, the Concierge unless a test says otherwise), and signs the
// approved ones for ten minutes unless sign is false.
type cluster struct {
	client    *fake.Clientset
	requestor string
	sign      bool
	ca        *x509.Certificate
	caKey     *ecdsa.PrivateKey
}

func newCluster(t *testing.T, objects ...runtime.Object) *cluster {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	c := &cluster{client: fake.NewClientset(objects...), requestor: concierge, sign: true, ca: ca, caKey: caKey}
	c.client.PrependReactor("create", "certificatesigningrequests", func(action kubetesting.Action) (bool, runtime.Object, error) {
		csr := action.(kubetesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
		csr.Name = csr.GenerateName + utilrand.String(5)
		csr.UID, csr.Spec.Username = types.UID("uid-"+csr.Name), c.requestor
		return false, nil, nil
	})
	c.client.PrependReactor("update", "certificatesigningrequests", func(action kubetesting.Action) (bool, runtime.Object, error) {
		update := action.(kubetesting.UpdateAction)
		csr := update.GetObject().(*certificatesv1.CertificateSigningRequest)
		if update.GetSubresource() != "approval" || !c.sign {
			return false, nil, nil
		}
		signed, err := c.signed(csr)
		if err != nil {
			return true, nil, err
		}
		csr.Status.Certificate = signed
		return false, nil, nil
	})
	return c
}

// signed is the certificate the signer issues for csr.
func (c *cluster) signed(csr *certificatesv1.CertificateSigningRequest) ([]byte, error) {
	block, _ := pem.Decode(csr.Spec.Request)
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: req.Subject, NotBefore: time.Now(),
		NotAfter: time.Now().Add(time.Duration(*csr.Spec.ExpirationSeconds) * time.Second), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.ca, req.PublicKey, c.caKey)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), err
}

func (c *cluster) issuer() *Issuer {
	return &Issuer{Client: c.client, Identity: concierge, Timeout: 2 * time.Second}
}

func (c *cluster) requests(t *testing.T) []certificatesv1.CertificateSigningRequest {
	t.Helper()
	list, err := c.client.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// A certificate for the user, from a request for the kube-apiserver-client signer with the
// shortest lifetime, approved by the Concierge, deleted once issued; the key matches it.
func TestIssueClientCert(t *testing.T) {
	c := newCluster(t)
	var seen *certificatesv1.CertificateSigningRequest
	c.client.PrependReactor("update", "certificatesigningrequests", func(action kubetesting.Action) (bool, runtime.Object, error) {
		seen = action.(kubetesting.UpdateAction).GetObject().(*certificatesv1.CertificateSigningRequest).DeepCopy()
		return false, nil, nil
	})
	certPEM, keyPEM, notAfter, err := c.issuer().IssueClientCert(context.Background(), "pinny", []string{"seals", "walruses"}, []string{"extra"}, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "pinny" || !slices.Equal(cert.Subject.Organization, []string{"seals", "walruses"}) ||
		!slices.Equal(cert.Subject.OrganizationalUnit, []string{"extra"}) || !cert.NotAfter.Equal(notAfter) {
		t.Errorf("certificate for %v until %v, reported %v", cert.Subject, cert.NotAfter, notAfter)
	}
	if d := time.Until(notAfter); d < 9*time.Minute || d > 10*time.Minute {
		t.Errorf("the certificate lives %v, want the API's shortest, 10m", d)
	}
	keyBlock, _ := pem.Decode(keyPEM)
	key, err := x509.ParseECPrivateKey(keyBlock.Bytes)
	if err != nil || !key.PublicKey.Equal(cert.PublicKey) {
		t.Errorf("the key does not match the certificate: %v", err)
	}
	if seen == nil || seen.Spec.SignerName != Signer || *seen.Spec.ExpirationSeconds != ExpirationSeconds ||
		len(seen.Status.Conditions) != 1 || seen.Status.Conditions[0].Type != certificatesv1.CertificateApproved {
		t.Errorf("approved %+v", seen)
	}
	if left := c.requests(t); len(left) != 0 {
		t.Errorf("%d CertificateSigningRequests left, want the Concierge's deleted", len(left))
	}
}

// The Concierge approves nothing it did not make as it made it: a request the API server says
// another user made (a look-alike with the label, say) is not approved, and someone else's request
// carrying the Concierge's label is never touched.
func TestApprovesOnlyItsOwn(t *testing.T) {
	foreign := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "pinniped-concierge-evil", Labels: map[string]string{Label: "true"}},
		Spec: certificatesv1.CertificateSigningRequestSpec{Username: "mallory", SignerName: Signer, Usages: usages,
			Request: []byte("-----BEGIN CERTIFICATE REQUEST-----\n-----END CERTIFICATE REQUEST-----\n"), ExpirationSeconds: ptr.To[int32](600)},
	}
	c := newCluster(t, foreign)
	c.requestor = "mallory"
	_, _, _, err := c.issuer().IssueClientCert(context.Background(), "pinny", nil, nil, 0)
	if err == nil {
		t.Fatal("a request made by another user was approved")
	}
	for _, a := range c.client.Actions() {
		if u, ok := a.(kubetesting.UpdateAction); ok && u.GetSubresource() == "approval" {
			t.Errorf("approved %s", u.GetObject().(*certificatesv1.CertificateSigningRequest).Name)
		}
		if d, ok := a.(kubetesting.DeleteAction); ok && d.GetName() == foreign.Name {
			t.Error("deleted someone else's request")
		}
	}
	left := c.requests(t)
	if len(left) != 1 || left[0].Name != foreign.Name || len(left[0].Status.Conditions) != 0 {
		t.Errorf("requests left %v, want only the foreign one, untouched", left)
	}

	// Its own requests go through meanwhile, and the foreign one stays.
	c.requestor = concierge
	if _, _, _, err := c.issuer().IssueClientCert(context.Background(), "pinny", nil, nil, 0); err != nil {
		t.Fatal(err)
	}
	if left := c.requests(t); len(left) != 1 || left[0].Name != foreign.Name || len(left[0].Status.Conditions) != 0 {
		t.Errorf("requests left %v, want only the foreign one, untouched", left)
	}
}

// How the cluster falls short is told apart, for the CredentialIssuer's reasons, and the request
// is deleted each time.
func TestFailures(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setUp func(*cluster)
		want  error
	}{
		{"no signer", func(c *cluster) { c.sign = false }, ErrNotIssued},
		{"approval forbidden", func(c *cluster) {
			c.client.PrependReactor("update", "certificatesigningrequests", func(action kubetesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(certificatesv1.Resource("signers"), Signer, errors.New("no approve verb"))
			})
		}, ErrApprovalForbidden},
		{"denied", func(c *cluster) {
			c.sign = false
			c.client.PrependReactor("update", "certificatesigningrequests", func(action kubetesting.Action) (bool, runtime.Object, error) {
				csr := action.(kubetesting.UpdateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
				csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
					Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue, Reason: "SignerValidationFailure", Message: "invalid usage"})
				return false, nil, nil
			})
		}, ErrDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			tc.setUp(c)
			i := c.issuer()
			i.Timeout = 200 * time.Millisecond
			if _, _, _, err := i.IssueClientCert(context.Background(), "pinny", nil, nil, 0); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
			if left := c.requests(t); len(left) != 0 {
				t.Errorf("%d requests left", len(left))
			}
		})
	}
}

// Without a configured identity, the issuer asks the API server once who it is.
func TestLearnsItsIdentity(t *testing.T) {
	c := newCluster(t)
	reviews := 0
	c.client.PrependReactor("create", "selfsubjectreviews", func(kubetesting.Action) (bool, runtime.Object, error) {
		reviews++
		return true, &authenticationv1.SelfSubjectReview{Status: authenticationv1.SelfSubjectReviewStatus{UserInfo: authenticationv1.UserInfo{Username: concierge}}}, nil
	})
	i := &Issuer{Client: c.client, Timeout: 2 * time.Second}
	for range 2 {
		if _, _, _, err := i.IssueClientCert(context.Background(), "pinny", nil, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	if reviews != 1 {
		t.Errorf("%d SelfSubjectReviews, want one", reviews)
	}
}
