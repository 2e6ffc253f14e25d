package impersonator

import (
	"crypto/x509"
	"encoding/pem"
	"reflect"
	"testing"
	"time"

	"sealion.dev/core/certauthority"
	"sealion.dev/servers/concierge/internal/certextra"
)

// The proxy reads back the extras the Concierge carried in a certificate's OUs, beside what the
// kube-apiserver itself reads from it (CN, O, and the certificate's hash as credential-id).
func TestCertificateUserReadsExtras(t *testing.T) {
	ca, err := certauthority.New("signer", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	parse := func(certPEM []byte) []*x509.Certificate {
		block, _ := pem.Decode(certPEM)
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return []*x509.Certificate{cert}
	}

	extra := map[string][]string{"example.com/team": {"a", "b"}, "authentication.kubernetes.io/credential-id": {"JTI=1"}}
	certPEM, _, _, err := ca.IssueClientCert("alice", []string{"devs"}, certextra.OrganizationalUnits(extra), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	resp, ok, err := ownCertificateUser.User(parse(certPEM))
	if err != nil || !ok {
		t.Fatalf("got %v %v", ok, err)
	}
	got := resp.User.GetExtra()
	if resp.User.GetName() != "alice" || !reflect.DeepEqual(resp.User.GetGroups(), []string{"devs"}) ||
		!reflect.DeepEqual(got["example.com/team"], []string{"a", "b"}) {
		t.Errorf("got %q %q %v", resp.User.GetName(), resp.User.GetGroups(), got)
	}
	if ids := got["authentication.kubernetes.io/credential-id"]; len(ids) != 2 || ids[1] != "JTI=1" {
		t.Errorf("credential-id %q, want the certificate's own then the token's", ids)
	}

	// What the credential exchange would never have written is refused, as it refuses such extras.
	for _, ous := range [][]string{
		{"not an extra"},
		{"kubernetes.io/reserved=x"},
		{"sub.k8s.io/reserved=x"},
		{"no-domain=x"},
		{"example.com/a=b", "=x"},
	} {
		certPEM, _, _, err := ca.IssueClientCert("bob", nil, ous, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := ownCertificateUser.User(parse(certPEM)); ok || err == nil {
			t.Errorf("a certificate of the proxy's signer with OUs %q was accepted", ous)
		}
	}
}
