// Package dynamicca holds a certificate authority that can be replaced while in use: set from
// memory (the kube cert agent hands over the cluster signing key) or reloaded from a pair of
// files (a mounted Secret).
//
// Files are polled rather than watched with fsnotify. Kubernetes updates Secret volumes by
// swapping a "..data" symlink, so the watched paths never see a write event: an inotify watch
// follows the old inode and must be re-established after every swap, and editors and rename(2)
// replace files in the same way. Re-reading two small files every few seconds has no such corner
// cases and costs nothing measurable; a CA rotation is visible within one interval.
package dynamicca

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"sealion.dev/core/certauthority"
	"sealion.dev/core/controller"
)

// ClientCertIssuer issues client certificates, such as those returned by a
// TokenCredentialRequest.
type ClientCertIssuer interface {
	// IssueClientCert issues a certificate with CommonName username, Organizations groups and
	// OrganizationalUnits organizationalUnits, valid for ttl, and returns it with its new private
	// key, both PEM-encoded, and its NotAfter.
	IssueClientCert(ctx context.Context, username string, groups, organizationalUnits []string, ttl time.Duration) (certPEM, keyPEM []byte, notAfter time.Time, err error)
}

// ErrNoCA is returned by IssueClientCert while no valid CA has been loaded.
var ErrNoCA = errors.New("no valid certificate authority loaded yet")

// DefaultPollInterval is how often WatchFiles re-reads its files when given no interval.
const DefaultPollInterval = 5 * time.Second

// Signer is a ClientCertIssuer whose CA can be replaced at any time. It is safe for concurrent
// use. The zero value is not usable; call New.
type Signer struct {
	name string
	opts []certauthority.Option

	mu sync.RWMutex
	ca *certauthority.CA
}

var _ ClientCertIssuer = (*Signer)(nil)

// New returns a Signer without a CA. name identifies it in errors and logs; opts are applied to
// every CA it loads.
func New(name string, opts ...certauthority.Option) *Signer {
	return &Signer{name: name, opts: opts}
}

// Set replaces the CA with the one in certPEM and keyPEM (see certauthority.Load). If they are
// not a valid CA, Set returns an error and keeps the current CA.
func (s *Signer) Set(certPEM, keyPEM []byte) error {
	_, err := s.set(certPEM, keyPEM)
	return err
}

func (s *Signer) set(certPEM, keyPEM []byte) (*certauthority.CA, error) {
	ca, err := certauthority.Load(certPEM, keyPEM, s.opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	s.mu.Lock()
	s.ca = ca
	s.mu.Unlock()
	return ca, nil
}

// Clear forgets the CA, for when its source has gone away; IssueClientCert then returns ErrNoCA.
func (s *Signer) Clear() {
	s.mu.Lock()
	s.ca = nil
	s.mu.Unlock()
}

// CABundle returns the current CA certificate as PEM, or nil while none is loaded.
func (s *Signer) CABundle() []byte {
	ca := s.current()
	if ca == nil {
		return nil
	}
	return ca.Bundle()
}

// NotAfter is when the current CA certificate expires; false while none is loaded.
func (s *Signer) NotAfter() (time.Time, bool) {
	ca := s.current()
	if ca == nil {
		return time.Time{}, false
	}
	return ca.Certificate().NotAfter, true
}

// IssueClientCert issues a client certificate from the current CA; see certauthority.CA.
func (s *Signer) IssueClientCert(_ context.Context, username string, groups, organizationalUnits []string, ttl time.Duration) ([]byte, []byte, time.Time, error) {
	ca := s.current()
	if ca == nil {
		return nil, nil, time.Time{}, fmt.Errorf("%s: %w", s.name, ErrNoCA)
	}
	certPEM, keyPEM, notAfter, err := ca.IssueClientCert(username, groups, organizationalUnits, ttl)
	if err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("%s: %w", s.name, err)
	}
	return certPEM, keyPEM, notAfter, nil
}

func (s *Signer) current() *certauthority.CA {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ca
}

// WatchFiles loads the CA from certPath and keyPath now and whenever their content changes,
// checking every interval (DefaultPollInterval if zero), until ctx is done. Files that are
// missing or do not hold a valid CA are logged and leave the current CA in place. It logs
// through klog.FromContext(ctx).
//
// It is a core/controller singleton without informers whose resync is the poll. A load never
// fails the sync: the next poll tries again anyway, so a retry would only add reads and logs.
func (s *Signer) WatchFiles(ctx context.Context, certPath, keyPath string, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	f := &files{signer: s, certPath: certPath, keyPath: keyPath}
	controller.New(controller.Options{
		Name:   "ca-files",
		Sync:   func(ctx context.Context, _ string) error { f.load(ctx); return nil },
		Resync: interval,
	}).Run(ctx)
}

// files loads a Signer's CA from its files. The controller syncs its single key on one worker
// at a time, so the fields need no lock.
type files struct {
	signer            *Signer
	certPath, keyPath string
	// What was last tried, good or bad, so an unchanged file is neither re-parsed nor re-logged.
	lastCert, lastKey []byte
	lastErr           string
}

func (f *files) load(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("signer", f.signer.name, "certPath", f.certPath, "keyPath", f.keyPath)
	certPEM, certErr := os.ReadFile(f.certPath)
	keyPEM, keyErr := os.ReadFile(f.keyPath)
	if err := errors.Join(certErr, keyErr); err != nil {
		if err.Error() != f.lastErr {
			logger.Error(err, "Cannot read CA files; keeping the current CA")
			f.lastErr = err.Error()
		}
		f.lastCert, f.lastKey = nil, nil
		return
	}
	if bytes.Equal(certPEM, f.lastCert) && bytes.Equal(keyPEM, f.lastKey) {
		return
	}
	f.lastCert, f.lastKey, f.lastErr = certPEM, keyPEM, ""
	ca, err := f.signer.set(certPEM, keyPEM)
	if err != nil {
		// Files swapped between the two reads look like a mismatched pair; the next poll sees
		// a consistent pair, which differs from this one and is therefore loaded.
		logger.Error(err, "Invalid CA files; keeping the current CA")
		return
	}
	logger.Info("Loaded CA", "subject", ca.Certificate().Subject.String(), "notAfter", ca.Certificate().NotAfter)
}
