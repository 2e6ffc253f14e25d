package dynamicca

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// FirstLoaded issues from the first of its Signers that has a CA: the Concierge prefers the
// cluster's signing key, whose certificates the kube-apiserver accepts, and falls back to the
// impersonation proxy's signer, whose certificates only the proxy accepts.
type FirstLoaded []*Signer

var _ ClientCertIssuer = FirstLoaded(nil)

// IssueClientCert issues from the first Signer with a CA; ErrNoCA when none has one.
func (f FirstLoaded) IssueClientCert(ctx context.Context, username string, groups, organizationalUnits []string, ttl time.Duration) ([]byte, []byte, time.Time, error) {
	for _, s := range f {
		certPEM, keyPEM, notAfter, err := s.IssueClientCert(ctx, username, groups, organizationalUnits, ttl)
		if errors.Is(err, ErrNoCA) {
			continue
		}
		return certPEM, keyPEM, notAfter, err
	}
	return nil, nil, time.Time{}, fmt.Errorf("none of %d signers: %w", len(f), ErrNoCA)
}

// CABundle returns the CA certificate IssueClientCert currently signs with, or nil.
func (f FirstLoaded) CABundle() []byte {
	for _, s := range f {
		if b := s.CABundle(); b != nil {
			return b
		}
	}
	return nil
}
