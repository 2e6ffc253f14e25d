package oauth

import (
	"strings"
	"testing"

	"golang.org/x/oauth2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
)

// A session that a Pinniped Supervisor stored names its identity provider by object only, not by
// display name: its refresh still finds the identity provider among several (a rolling migration
// from Pinniped keeps its logins).
func TestRefreshOfSessionNamingOnlyTheObject(t *testing.T) {
	ups := &fakeUpstreams{}
	ups.add(issuer.TypeLDAP, "corp-ldap", newFakeDirectory())
	h := newHarnessWith(t, ups, ldapIDP(issuer.TypeLDAP), oidcIDP())
	l := h.login()
	tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	secrets := h.clientset.CoreV1().Secrets(namespace)
	list, err := secrets.List(h.ctx, metav1.ListOptions{LabelSelector: sessions.TypeLabel + "=" + typeRefreshToken})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("refresh token Secrets: %v, %v", list, err)
	}
	secret := &list.Items[0]
	displayName := `"providerDisplayName":"` + idpName + `",`
	if !strings.Contains(string(secret.Data[sessions.DataKey]), displayName) {
		t.Fatalf("the stored session lacks %s: %s", displayName, secret.Data[sessions.DataKey])
	}
	secret.Data[sessions.DataKey] = []byte(strings.Replace(string(secret.Data[sessions.DataKey]), displayName, "", 1))
	if _, err := secrets.Update(h.ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.cli().TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); err != nil {
		t.Errorf("refreshing a session that names only its identity provider object: %v", err)
	}
}
