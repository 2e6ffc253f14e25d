package dynamicca

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// FirstLoaded issues from the first of its issuers that can: the Concierge prefers the cluster's
// signer while the CertificateSigningRequest strategy works, then the cluster's signing key (the
// kube cert agent), whose certificates the kube-apiserver accepts too, and falls back to the
// impersonation proxy's signer, whose certificates only the proxy accepts. An issuer that cannot
// issue now answers ErrNoCA.
type FirstLoaded []ClientCertIssuer

var _ ClientCertIssuer = FirstLoaded(nil)

// IssueClientCert issues from the first issuer that does not answer ErrNoCA; ErrNoCA when none can.
func (f FirstLoaded) IssueClientCert(ctx context.Context, username string, groups, organizationalUnits []string, ttl time.Duration) ([]byte, []byte, time.Time, error) {
	for _, s := range f {
		certPEM, keyPEM, notAfter, err := s.IssueClientCert(ctx, username, groups, organizationalUnits, ttl)
		if errors.Is(err, ErrNoCA) {
			continue
		}
		return certPEM, keyPEM, notAfter, err
	}
	return nil, nil, time.Time{}, fmt.Errorf("none of %d issuers: %w", len(f), ErrNoCA)
}
