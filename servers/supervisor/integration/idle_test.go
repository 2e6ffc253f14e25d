package integration

import (
	"context"
	"testing"

	"golang.org/x/oauth2"

	"sealion.dev/core/testing/metricstest"
	"sealion.dev/core/testing/testdeps"
	"sealion.dev/fixtures/ldap"
)

// TestIdleSupervisorWritesNothing: once its FederationDomain and identity provider are Ready and
// it has served a login and a token exchange, a Supervisor with nothing to do sends the
// kube-apiserver no writes but its leader election's (metricstest.WritesWhileIdle says why that
// matters and how it is seen). The session the login left is live, not expired, so its garbage
// collection has nothing to delete.
func TestIdleSupervisorWritesNothing(t *testing.T) {
	_, err := ldap.FindSlapd()
	testdeps.Require(t, err)
	ctx := context.Background()
	user := ldap.User{Username: "idle", CommonName: "idle", Mail: "idle@example.com", Password: "pw-idle", Groups: []string{"idle"}}
	dir, err := ldap.Start(ctx, ldap.Options{Users: []ldap.User{user}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dir.Close() })
	issuerURL := setUpLDAPIssuer(t, "idle", dir)
	client := loadClient()
	var tok *oauth2.Token
	// The endpoints serve the identity provider once the registry has it, which may be a moment
	// after the FederationDomain says Ready.
	eventually(t, "a password login", func() error {
		tok, err = passwordLogin(ctx, client, cliConfig(issuerURL), user.Username, user.Password)
		return err
	})
	if err := exchange(ctx, client, issuerURL, tok.AccessToken); err != nil {
		t.Fatal(err)
	}

	if err := metricstest.WritesWhileIdle(t, env.kube); err != nil {
		t.Errorf("%v%s", err, env.serverLog())
	}
}
