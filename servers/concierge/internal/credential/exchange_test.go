package credential

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/component-base/metrics/testutil"

	"sealion.dev/core/reservednames"
	"sealion.dev/servers/concierge/internal/authncache"
	"sealion.dev/servers/internal/audit"
)

type fakeAuthenticators map[string]*authenticator.Response

func (f fakeAuthenticators) AuthenticateToken(_ context.Context, key authncache.Key, token string) (*authenticator.Response, bool, error) {
	if key.Name != "known" {
		return nil, false, authncache.ErrNoSuchAuthenticator
	}
	if token == "error" {
		return nil, false, errors.New("issuer said: claim x was bad")
	}
	resp, ok := f[token]
	return resp, ok, nil
}

type fakeIssuer struct {
	now      time.Time // the certificates' NotAfter is now+ttl
	username string
	groups   []string
	ous      []string
	ttl      time.Duration
	err      error
}

func (f *fakeIssuer) IssueClientCert(_ context.Context, username string, groups, organizationalUnits []string, ttl time.Duration) ([]byte, []byte, time.Time, error) {
	f.username, f.groups, f.ous, f.ttl = username, groups, organizationalUnits, ttl
	if f.err != nil {
		return nil, nil, time.Time{}, f.err
	}
	return []byte("CERT"), []byte("KEY"), f.now.Add(ttl), nil
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
		wantEvents []string
		wantOUs    []string
		// wantReason is the failures counter's reason, for a refusal.
		wantReason string
	}{
		{name: "valid", key: known, token: "alice", wantEvents: []string{"TokenCredentialRequest Token Received", "TokenCredentialRequest Authenticated User"}, wantUser: "alice", wantGroups: []string{"devs", "ops"}},
		{name: "credential id extra is carried", key: known, token: "credid", wantEvents: []string{"TokenCredentialRequest Token Received", "TokenCredentialRequest Authenticated User"}, wantUser: "bob",
			wantOUs: []string{"authentication.kubernetes.io/credential-id=x"}},
		// As Pinniped v0.40+: any extra with a valid key goes into the certificate's OUs.
		{name: "domain-prefixed extras are carried", key: known, token: "domainextras", wantEvents: []string{"TokenCredentialRequest Token Received", "TokenCredentialRequest Authenticated User"}, wantUser: "dave",
			wantOUs: []string{"authentication.kubernetes.io/credential-id=JTI=1", "example.com/team=a", "example.com/team=b"}},
		{name: "empty token", key: known, token: "", wantEvents: nil, wantReason: reasonEmptyToken},
		{name: "unknown token", key: known, token: "mallory", wantEvents: []string{"TokenCredentialRequest Token Received", "TokenCredentialRequest Authentication Failed"}, wantReason: reasonNotAuthenticated},
		{name: "authenticator error", key: known, token: "error", wantEvents: []string{"TokenCredentialRequest Token Received", "TokenCredentialRequest Unexpected Error"}, wantReason: reasonAuthenticatorError},
		{name: "unknown authenticator", key: authncache.Key{Kind: "JWTAuthenticator", Name: "other"}, token: "alice", wantEvents: []string{"TokenCredentialRequest Token Received", "TokenCredentialRequest Unexpected Error"}, wantReason: reasonAuthenticatorError},
		{name: "empty username", key: known, token: "noname", wantEvents: []string{"TokenCredentialRequest Token Received", "TokenCredentialRequest Unsupported UserInfo"}, wantReason: reasonUnsupportedUser},
		{name: "uid", key: known, token: "uid", wantEvents: []string{"TokenCredentialRequest Token Received", "TokenCredentialRequest Unsupported UserInfo"}, wantReason: reasonUnsupportedUser},
		{name: "extra key that is not domain-prefixed", key: known, token: "extras", wantEvents: []string{"TokenCredentialRequest Token Received", "TokenCredentialRequest Unsupported UserInfo"}, wantReason: reasonUnsupportedUser},
		{name: "no user in response", key: known, token: "nilresult", wantEvents: []string{"TokenCredentialRequest Token Received", "TokenCredentialRequest Unsupported UserInfo"}, wantReason: reasonUnsupportedUser},
		{name: "issuer fails", key: known, token: "alice", issuerErr: errors.New("no CA loaded"), wantEvents: []string{"TokenCredentialRequest Token Received", "TokenCredentialRequest Unexpected Error"}, wantReason: reasonIssuerError},
		{name: "reserved username", key: known, token: "admin", wantEvents: []string{"TokenCredentialRequest Token Received", "TokenCredentialRequest Unsupported UserInfo"}, wantReason: reasonReservedName},
		{name: "reserved group", key: known, token: "masters", wantEvents: []string{"TokenCredentialRequest Token Received", "TokenCredentialRequest Unsupported UserInfo"}, wantReason: reasonReservedName},
		{name: "reserved group in another case", key: known, token: "mixedcase", wantEvents: []string{"TokenCredentialRequest Token Received", "TokenCredentialRequest Unsupported UserInfo"}, wantReason: reasonReservedName},
		{name: "reserved group not among the exceptions", key: known, token: "masters", reserved: reservednames.Exceptions{Groups: []string{"system:monitoring"}}, wantEvents: []string{"TokenCredentialRequest Token Received", "TokenCredentialRequest Unsupported UserInfo"}, wantReason: reasonReservedName},
		{name: "reserved group allowed by exception", key: known, token: "monitor", reserved: reservednames.Exceptions{Groups: []string{"system:monitoring"}},
			wantUser: "prometheus", wantGroups: []string{"system:monitoring"}, wantEvents: []string{"TokenCredentialRequest Token Received", "TokenCredentialRequest Authenticated User"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			issuer := &fakeIssuer{err: tt.issuerErr, now: now}
			var log bytes.Buffer
			e := &Exchanger{Authenticators: users, Issuer: issuer, Reserved: tt.reserved, Now: func() time.Time { return now }, Audit: audit.New(&log, false)}
			before := failureCounts(t)
			cred, err := e.Exchange(context.Background(), tt.key, tt.token)
			checkEvents(t, log.String(), e.Audit.TokenID(tt.token), tt.token, tt.wantEvents)
			after := failureCounts(t)
			for _, reason := range reasons {
				want := 0.0
				if reason == tt.wantReason {
					want = 1
				}
				if got := after[reason] - before[reason]; got != want {
					t.Errorf("failures{reason=%q} grew by %v, want %v", reason, got, want)
				}
			}
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

// checkEvents checks that out holds the events named want, in order, each marked as an audit
// event and naming the authenticator where Pinniped's does, the first with the token's
// fingerprint tokenID; and that neither the token nor (redacted by default) a username appears. A
// reserved name is Kubernetes's, not a person's, and may be named in the reason.
func checkEvents(t *testing.T, out, tokenID, token string, want []string) {
	t.Helper()
	var got []string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not JSON: %s", line)
		}
		msg, _ := ev["message"].(string)
		got = append(got, msg)
		switch {
		case ev["auditEvent"] != true:
			t.Errorf("not marked auditEvent: %s", line)
		case msg == "TokenCredentialRequest Token Received" && ev["tokenID"] != tokenID:
			t.Errorf("tokenID is not the token's fingerprint: %s", line)
		case msg != "TokenCredentialRequest Token Received" && ev["authenticator"] == nil:
			t.Errorf("no authenticator: %s", line)
		}
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", got, want)
	}
	for _, secret := range []string{`"` + token + `"`, "alice", "mallory", "prometheus"} {
		if token != "" && strings.Contains(out, secret) {
			t.Errorf("the events show %s:\n%s", secret, out)
		}
	}
}

// The successful and the refused exchange name the user's details in personalInfo: redacted by
// default, in clear when enabled. The authenticator's error and the reason are written.
func TestExchangeAuditDetails(t *testing.T) {
	users := fakeAuthenticators{"alice": {User: &user.DefaultInfo{Name: "alice", Groups: []string{"devs", "ops"}}}, "uid": {User: &user.DefaultInfo{Name: "sa", UID: "1234"}}}
	known := authncache.Key{APIGroup: "authentication.concierge.pinniped.dev", Kind: "JWTAuthenticator", Name: "known"}
	for _, tt := range []struct {
		token    string
		personal bool
		want     []string
	}{
		{"alice", false, []string{`"personalInfo":{"username":"redacted","groups":["redacted 2 values"],"extras":{"redacted":"redacted 0 keys"}}`,
			`"issuedClientCert":{"notAfter":"2026-01-02T03:09:05Z"}`, `"authenticator":{"apiGroup":"authentication.concierge.pinniped.dev","kind":"JWTAuthenticator","name":"known"}`}},
		{"alice", true, []string{`"personalInfo":{"username":"alice","groups":["devs","ops"],"extras":{}}`}},
		{"uid", true, []string{`"personalInfo":{"userInfoName":"sa","userInfoUID":"1234"},"userInfoExtrasCount":0,"reason":"unsupported value in userInfo returned by authenticator","err":"UIDs are not supported"`}},
		{"error", false, []string{`"reason":"authenticator returned an error","err":"issuer said: claim x was bad"`}},
		{"nobody", false, []string{`"reason":"auth rejected by authenticator"`}},
	} {
		var log bytes.Buffer
		e := &Exchanger{Authenticators: users, Issuer: &fakeIssuer{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }, Audit: audit.New(&log, tt.personal)}
		_, _ = e.Exchange(context.Background(), known, tt.token)
		for _, w := range tt.want {
			if !strings.Contains(log.String(), w) {
				t.Errorf("%s (personal %v): events do not contain %s:\n%s", tt.token, tt.personal, w, log.String())
			}
		}
	}
}

func TestKnownKindBoundsMetricLabels(t *testing.T) {
	for in, want := range map[string]string{"JWTAuthenticator": "JWTAuthenticator", "WebhookAuthenticator": "WebhookAuthenticator", "Evil\nKind": "unknown", "": "unknown"} {
		if got := knownKind(in); got != want {
			t.Errorf("knownKind(%q) = %q, want %q", in, got, want)
		}
	}
}

// failureCounts reads the failures counter of JWTAuthenticator exchanges, by reason.
func failureCounts(t *testing.T) map[string]float64 {
	t.Helper()
	RegisterMetrics() // component-base metrics count nothing until registered
	counts := map[string]float64{}
	for _, reason := range reasons {
		v, err := testutil.GetCounterMetricValue(failures.WithLabelValues("JWTAuthenticator", reason))
		if err != nil {
			t.Fatal(err)
		}
		counts[reason] = v
	}
	return counts
}
