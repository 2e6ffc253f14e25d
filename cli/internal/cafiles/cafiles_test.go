package cafiles

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sealion.dev/core/certauthority"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, name := range []string{"a", "b"} {
		ca, err := certauthority.New(name, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		// The first file lacks its final newline: its END line must not run into the next BEGIN.
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, bytes.TrimSuffix(ca.Bundle(), []byte("\n")), 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	bundle, err := Read("ca-bundle", paths)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rest := bundle; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, cert.Subject.CommonName)
	}
	if strings.Join(names, ",") != "a,b" {
		t.Errorf("certificates %v in the bundle, want a,b:\n%s", names, bundle)
	}

	if got, err := Read("ca-bundle", nil); got != nil || err != nil {
		t.Errorf("no paths: %q, %v", got, err)
	}
	if _, err := Read("oidc-ca-bundle", []string{filepath.Join(dir, "missing")}); err == nil || !strings.Contains(err.Error(), "reading --oidc-ca-bundle: ") {
		t.Errorf("err = %v, want one naming the flag", err)
	}
}
