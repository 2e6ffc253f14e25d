// Package csrsigner issues the Concierge's client certificates through the Kubernetes
// CertificateSigningRequest API (the CertificateSigningRequest strategy): for each
// TokenCredentialRequest it makes a key pair, asks the cluster's kubernetes.io/kube-apiserver-client
// signer for a certificate with the shortest lifetime the API allows, approves its own request,
// waits for the certificate and deletes the request. No pod reads the cluster's signing key, and
// the key pair is never stored.
//
// It approves only what it created, as it created it: the CertificateSigningRequest must carry its
// label, have been made by the Concierge's own identity, for the signer and usages it asked, and
// hold the very request it computed. Anyone else's request, with the label or not, is left alone.
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
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Signer is the signer whose certificates the kube-apiserver accepts for client authentication.
const Signer = certificatesv1.KubeAPIServerClientSignerName

// ExpirationSeconds is the shortest lifetime a CertificateSigningRequest may ask for (the API
// refuses less). The other strategies issue five-minute certificates; these live ten.
const ExpirationSeconds = 600

// Label marks the CertificateSigningRequests the Concierge makes; it is a filter for watching and
// cleaning up, never a proof: anyone allowed to create CertificateSigningRequests can set it.
const Label = "concierge.sealion.dev/token-credential-request"

// Errors of IssueClientCert that say how the cluster fell short; other errors are the API's.
var (
	// ErrApprovalForbidden: the Concierge may not approve requests for the signer.
	ErrApprovalForbidden = errors.New("approving CertificateSigningRequests for " + Signer + " is forbidden")
	// ErrNotIssued: the signer did not issue the certificate in time (no controller signs for it,
	// as on EKS, or it is overloaded).
	ErrNotIssued = errors.New("the " + Signer + " signer did not issue the certificate in time")
	// ErrDenied: the request was denied or failed (another approver, or the signer refused it).
	ErrDenied = errors.New("the CertificateSigningRequest was denied or failed")
)

// Issuer issues client certificates through CertificateSigningRequests. It is safe for
// concurrent use.
type Issuer struct {
	// Client creates, approves, watches and deletes the requests; its writes must go through on
	// every replica, which all serve TokenCredentialRequests.
	Client kubernetes.Interface
	// Identity is the username the API server records as the requestor of the Concierge's
	// requests (its ServiceAccount's, system:serviceaccount:<namespace>:<name>). When empty, it is
	// asked of the API server (a SelfSubjectReview) at the first request, and kept.
	Identity string
	// Timeout bounds the wait for the signer; DefaultTimeout when zero.
	Timeout time.Duration

	learned atomic.Pointer[string]
}

// identity is Identity, or the identity the API server gives Client, learned once.
func (i *Issuer) identity(ctx context.Context) (string, error) {
	if i.Identity != "" {
		return i.Identity, nil
	}
	if id := i.learned.Load(); id != nil {
		return *id, nil
	}
	review, err := i.Client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("learning the Concierge's own identity: %w", err)
	}
	id := review.Status.UserInfo.Username
	if id == "" {
		return "", errors.New("the API server gave the Concierge no username")
	}
	i.learned.Store(&id)
	return id, nil
}

// DefaultTimeout is how long IssueClientCert waits for the certificate. The kube-controller-manager
// signs an approved request within milliseconds; a signer that takes seconds is not serving.
const DefaultTimeout = 10 * time.Second

// IssueClientCert issues a certificate with CommonName username, Organizations groups and
// OrganizationalUnits organizationalUnits, and returns it with its new private key, both
// PEM-encoded, and when it expires. ttl is ignored: the certificate lives ExpirationSeconds, the
// shortest the API allows.
func (i *Issuer) IssueClientCert(ctx context.Context, username string, groups, organizationalUnits []string, _ time.Duration) (certPEM, keyPEM []byte, notAfter time.Time, err error) {
	identity, err := i.identity(ctx)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	subject := pkix.Name{CommonName: username, Organization: groups, OrganizationalUnit: organizationalUnits}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("making the certificate request: %w", err)
	}
	request := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	csrs := i.Client.CertificatesV1().CertificateSigningRequests()
	created, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "pinniped-concierge-", Labels: map[string]string{Label: "true"}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           request,
			SignerName:        Signer,
			ExpirationSeconds: ptr.To[int32](ExpirationSeconds),
			Usages:            usages,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("creating a CertificateSigningRequest: %w", err)
	}
	// The request holds no secret, but it is done with whatever happens.
	defer func() {
		_ = csrs.Delete(context.WithoutCancel(ctx), created.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &created.UID}})
	}()
	if err := ours(created, identity, request); err != nil {
		return nil, nil, time.Time{}, err
	}
	// Watched from its creation, before the approval, so that no change is missed however quickly
	// the signer answers.
	timeout := i.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	w, err := csrs.Watch(waitCtx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", created.Name).String(), ResourceVersion: created.ResourceVersion,
	})
	if err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("watching CertificateSigningRequest %s: %w", created.Name, err)
	}
	defer w.Stop()
	created.Status.Conditions = append(created.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
		Reason: "PinnipedConciergeTokenCredentialRequest", Message: "approved by the Concierge for an authenticated TokenCredentialRequest",
	})
	if _, err := csrs.UpdateApproval(ctx, created.Name, created, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsForbidden(err) {
			return nil, nil, time.Time{}, fmt.Errorf("%w: %w", ErrApprovalForbidden, err)
		}
		return nil, nil, time.Time{}, fmt.Errorf("approving CertificateSigningRequest %s: %w", created.Name, err)
	}
	certPEM, err = waitForCertificate(waitCtx, w, created.Name, timeout)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	cert, err := parseIssued(certPEM, &key.PublicKey)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	return certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), cert.NotAfter, nil
}

// usages are those of a client certificate.
var usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}

// ours checks that created is the request the Concierge just made, as the API server stored it:
// its label, its requestor, its signer and usages, and the very request bytes. Only then is it
// approved.
func ours(created *certificatesv1.CertificateSigningRequest, identity string, request []byte) error {
	switch {
	case created.Labels[Label] != "true":
		return errors.New("the created CertificateSigningRequest lacks the Concierge's label")
	case created.Spec.Username != identity:
		return fmt.Errorf("the created CertificateSigningRequest was made by %q, not the Concierge's %q", created.Spec.Username, identity)
	case created.Spec.SignerName != Signer || !slices.Equal(created.Spec.Usages, usages):
		return errors.New("the created CertificateSigningRequest is not for the signer and usages asked")
	case string(created.Spec.Request) != string(request):
		return errors.New("the created CertificateSigningRequest does not hold the request the Concierge made")
	}
	return nil
}

// waitForCertificate reads w, a watch of the request name, until its certificate is issued, it is
// denied or fails, or ctx (of timeout) ends.
func waitForCertificate(ctx context.Context, w watch.Interface, name string, timeout time.Duration) ([]byte, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (%s)", ErrNotIssued, timeout)
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, fmt.Errorf("%w: the watch ended", ErrNotIssued)
			}
			csr, isCSR := ev.Object.(*certificatesv1.CertificateSigningRequest)
			if !isCSR || csr.Name != name || ev.Type == watch.Deleted {
				continue
			}
			for _, c := range csr.Status.Conditions {
				if (c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed) && c.Status == corev1.ConditionTrue {
					return nil, fmt.Errorf("%w: %s %s: %s", ErrDenied, c.Type, c.Reason, c.Message)
				}
			}
			if len(csr.Status.Certificate) > 0 {
				return csr.Status.Certificate, nil
			}
		}
	}
}

// parseIssued checks that the signer issued a client certificate for key.
func parseIssued(certPEM []byte, key *ecdsa.PublicKey) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("the signer issued no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the signer's certificate: %w", err)
	}
	if pub, ok := cert.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(key) {
		return nil, errors.New("the signer's certificate is not for the requested key")
	}
	return cert, nil
}
