package dynamicca

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2/ktesting"

	"sealion.dev/core/certauthority"
)

const (
	pollInterval = 10 * time.Millisecond
	waitFor      = 5 * time.Second
)

func newCA(t *testing.T, name string) *certauthority.CA {
	t.Helper()
	ca, err := certauthority.New(name, time.Hour)
	require.NoError(t, err)
	return ca
}

// assertIssuesFrom checks that s issues client certificates that verify against want's bundle.
func assertIssuesFrom(t *testing.T, s ClientCertIssuer, want *certauthority.CA) {
	t.Helper()
	certPEM, _, _, err := s.IssueClientCert(context.Background(), "alice", []string{"devs"}, nil, time.Minute)
	require.NoError(t, err)
	block, _ := pem.Decode(certPEM)
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AddCert(want.Certificate())
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err, "issued certificate must chain to %s", want.Certificate().Subject)
	if signer, ok := s.(*Signer); ok {
		assert.Equal(t, want.Bundle(), signer.CABundle())
	}
}

func TestSet(t *testing.T) {
	ca1, ca2 := newCA(t, "one"), newCA(t, "two")

	s := New("test signer")
	_, _, _, err := s.IssueClientCert(context.Background(), "alice", nil, nil, time.Minute)
	require.ErrorIs(t, err, ErrNoCA)
	assert.EqualError(t, err, "test signer: no valid certificate authority loaded yet")
	assert.Nil(t, s.CABundle())

	require.NoError(t, s.Set(ca1.Bundle(), ca1.PrivateKeyPEM()))
	assertIssuesFrom(t, s, ca1)

	tests := []struct {
		name    string
		certPEM []byte
		keyPEM  []byte
		wantErr string
	}{
		{name: "garbage", certPEM: []byte("garbage"), keyPEM: []byte("garbage"), wantErr: "test signer: load CA: no CERTIFICATE PEM block found"},
		{name: "mismatched pair", certPEM: ca2.Bundle(), keyPEM: ca1.PrivateKeyPEM(), wantErr: "private key does not match"},
		{name: "empty", wantErr: "no CERTIFICATE PEM block found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorContains(t, s.Set(tt.certPEM, tt.keyPEM), tt.wantErr)
			assertIssuesFrom(t, s, ca1)
		})
	}

	require.NoError(t, s.Set(ca2.Bundle(), ca2.PrivateKeyPEM()))
	assertIssuesFrom(t, s, ca2)

	s.Clear()
	_, _, _, err = s.IssueClientCert(context.Background(), "alice", nil, nil, time.Minute)
	require.ErrorIs(t, err, ErrNoCA)
}

// watch runs s.WatchFiles until the test ends.
func watch(t *testing.T, s *Signer, certPath, keyPath string) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.WatchFiles(ctx, certPath, keyPath, pollInterval)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func waitForBundle(t *testing.T, s *Signer, want *certauthority.CA) {
	t.Helper()
	require.Eventually(t, func() bool { return bytes.Equal(s.CABundle(), want.Bundle()) }, waitFor, pollInterval,
		"signer never loaded %s", want.Certificate().Subject)
}

// replaceFile writes data to a temporary file and renames it over path, as tools that update
// files atomically do.
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, data, 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

func TestWatchFilesRename(t *testing.T) {
	ca1, ca2 := newCA(t, "one"), newCA(t, "two")
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")

	s := New("files")
	watch(t, s, certPath, keyPath)

	// Missing files: no CA yet, and no crash.
	time.Sleep(3 * pollInterval)
	_, _, _, err := s.IssueClientCert(context.Background(), "alice", nil, nil, time.Minute)
	require.ErrorIs(t, err, ErrNoCA)

	replaceFile(t, keyPath, ca1.PrivateKeyPEM())
	replaceFile(t, certPath, ca1.Bundle())
	waitForBundle(t, s, ca1)
	assertIssuesFrom(t, s, ca1)

	replaceFile(t, certPath, ca2.Bundle())
	replaceFile(t, keyPath, ca2.PrivateKeyPEM())
	waitForBundle(t, s, ca2)
	assertIssuesFrom(t, s, ca2)

	// Garbage, then deleted files, keep the last good CA.
	replaceFile(t, certPath, []byte("garbage"))
	time.Sleep(5 * pollInterval)
	assertIssuesFrom(t, s, ca2)
	require.NoError(t, os.Remove(certPath))
	time.Sleep(5 * pollInterval)
	assertIssuesFrom(t, s, ca2)

	// Restoring the very content seen before the failures is loaded again.
	replaceFile(t, certPath, ca1.Bundle())
	replaceFile(t, keyPath, ca1.PrivateKeyPEM())
	waitForBundle(t, s, ca1)
}

// TestWatchFilesSecretVolume mimics how the kubelet updates a Secret volume: the visible files
// are symlinks through "..data", itself a symlink to a timestamped directory that is swapped by
// renaming a new symlink over it.
func TestWatchFilesSecretVolume(t *testing.T) {
	ca1, ca2 := newCA(t, "one"), newCA(t, "two")
	dir := t.TempDir()

	writeVersion := func(version string, ca *certauthority.CA) {
		versionDir := filepath.Join(dir, version)
		require.NoError(t, os.Mkdir(versionDir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(versionDir, "tls.crt"), ca.Bundle(), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(versionDir, "tls.key"), ca.PrivateKeyPEM(), 0o600))
		require.NoError(t, os.Symlink(version, filepath.Join(dir, "..data_tmp")))
		require.NoError(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	}
	writeVersion("..2025_01_01", ca1)
	for _, name := range []string{"tls.crt", "tls.key"} {
		require.NoError(t, os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)))
	}

	s := New("secret volume")
	watch(t, s, filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	waitForBundle(t, s, ca1)

	writeVersion("..2025_01_02", ca2)
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "..2025_01_01")))
	waitForBundle(t, s, ca2)
	assertIssuesFrom(t, s, ca2)
}

func TestWatchFilesStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		New("stop").WatchFiles(ctx, "/nonexistent/ca.crt", "/nonexistent/ca.key", 0)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(waitFor):
		t.Fatal("WatchFiles did not return after its context was cancelled")
	}
}
