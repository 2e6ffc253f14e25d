package credential

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"

	"sealion.dev/core/reservednames"
	"sealion.dev/servers/concierge/internal/authncache"
)

type fakeAuthenticators map[string]*authenticator.Response

func (f fakeAuthenticators) AuthenticateToken(_ context.Context, key authncache.Key, token string) (*authenticator.Response, bool, error) {
	if key.Name != "known" {
		return nil, false, nil
	}
	if token == "error" {
		return nil, false, errors.New("issuer said: claim x was bad")
	}
	resp, ok := f[token]
	return resp, ok, nil
}

type fakeIssuer struct {
	username string
	groups   []string
	ous      []string
	ttl      time.Duration
	err      error
}

func (f *fakeIssuer) IssueClientCert(username string, groups, organizationalUnits []string, ttl time.Duration) ([]byte, []byte, error) {
	f.username, f.groups, f.ous, f.ttl = username, groups, organizationalUnits, ttl
	if f.err != nil {
		return nil, nil, f.err
	}
	return []byte("CERT"), []byte("KEY"), nil
}

func TestExchange(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	users := fakeAuthenticators{
		"alice":  {User: &user.DefaultInfo{Name: "alice", Groups: []string{"devs", "ops"}}},
		"credid": {User: &user.DefaultInfo{Name: "bob", Extra: map[string][]string{"authentication.kubernetes.io/credential-id": {"x"}}}},
		"domainextras": {User: &user.DefaultInfo{Name: "dave", Extra: map[string][]string{
			"example.com/team": {"b", "a"}, "authentication.kubernetes.io/credential-id": {"JTI=1"}}}},
		"noname":    {User: &user.DefaultInfo{Groups: []string{"devs"}}},
		"uid":       {User: &user.DefaultInfo{Name: "sa", UID: "1234"}},
		"extras":    {User: &user.DefaultInfo{Name: "carol", Extra: map[string][]string{"scopes": {"x"}}}},
		"nilresult": {},
		"admin":     {User: &user.DefaultInfo{Name: "system:admin"}},
		"masters":   {User: &user.DefaultInfo{Name: "mallory", Groups: []string{"devs", "system:masters"}}},
		"mixedcase": {User: &user.DefaultInfo{Name: "mallory", Groups: []string{"System:Masters"}}},
		"monitor":   {User: &user.DefaultInfo{Name: "prometheus", Groups: []string{"system:monitoring"}}},
	}
	known := authncache.Key{APIGroup: "authentication.concierge.pinniped.dev", Kind: "JWTAuthenticator", Name: "known"}
	tests := []struct {
		name       string
		key        authncache.Key
		token      string
		issuerErr  error
		reserved   reservednames.Exceptions
		wantUser   string
		wantGroups []string
		wantOUs    []string
	}{
		{name: "valid", key: known, token: "alice", wantUser: "alice", wantGroups: []string{"devs", "ops"}},
		{name: "credential id extra is carried", key: known, token: "credid", wantUser: "bob",
			wantOUs: []string{"authentication.kubernetes.io/credential-id=x"}},
		// As Pinniped v0.40+: any extra with a valid key goes into the certificate's OUs.
		{name: "domain-prefixed extras are carried", key: known, token: "domainextras", wantUser: "dave",
			wantOUs: []string{"authentication.kubernetes.io/credential-id=JTI=1", "example.com/team=a", "example.com/team=b"}},
		{name: "empty token", key: known, token: ""},
		{name: "unknown token", key: known, token: "mallory"},
		{name: "authenticator error", key: known, token: "error"},
		{name: "unknown authenticator", key: authncache.Key{Kind: "JWTAuthenticator", Name: "other"}, token: "alice"},
		{name: "empty username", key: known, token: "noname"},
		{name: "uid", key: known, token: "uid"},
		{name: "extra key that is not domain-prefixed", key: known, token: "extras"},
		{name: "no user in response", key: known, token: "nilresult"},
		{name: "issuer fails", key: known, token: "alice", issuerErr: errors.New("no CA loaded")},
		{name: "reserved username", key: known, token: "admin"},
		{name: "reserved group", key: known, token: "masters"},
		{name: "reserved group in another case", key: known, token: "mixedcase"},
		{name: "reserved group not among the exceptions", key: known, token: "masters", reserved: reservednames.Exceptions{Groups: []string{"system:monitoring"}}},
		{name: "reserved group allowed by exception", key: known, token: "monitor", reserved: reservednames.Exceptions{Groups: []string{"system:monitoring"}},
			wantUser: "prometheus", wantGroups: []string{"system:monitoring"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			issuer := &fakeIssuer{err: tt.issuerErr}
			e := &Exchanger{Authenticators: users, Issuer: issuer, Reserved: tt.reserved, Now: func() time.Time { return now }}
			cred, err := e.Exchange(context.Background(), tt.key, tt.token)
			if tt.wantUser == "" {
				if !errors.Is(err, ErrAuthenticationFailed) || err.Error() != "authentication failed" || cred != nil {
					t.Fatalf("got cred=%v err=%v, want the uniform authentication failure", cred, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if issuer.username != tt.wantUser || !slices.Equal(issuer.groups, tt.wantGroups) || !slices.Equal(issuer.ous, tt.wantOUs) || issuer.ttl != DefaultTTL {
				t.Errorf("issued for %q %v OUs %q ttl %v", issuer.username, issuer.groups, issuer.ous, issuer.ttl)
			}
			if cred.ClientCertificateData != "CERT" || cred.ClientKeyData != "KEY" || !cred.ExpirationTimestamp.Equal(now.Add(5*time.Minute)) {
				t.Errorf("unexpected credential %+v", cred)
			}
		})
	}
}

func TestKnownKindBoundsMetricLabels(t *testing.T) {
	for in, want := range map[string]string{"JWTAuthenticator": "JWTAuthenticator", "WebhookAuthenticator": "WebhookAuthenticator", "Evil\nKind": "unknown", "": "unknown"} {
		if got := knownKind(in); got != want {
			t.Errorf("knownKind(%q) = %q, want %q", in, got, want)
		}
	}
}
