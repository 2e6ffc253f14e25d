package jwt

import (
	"context"
	"slices"
	"strings"
	"testing"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	"sealion.dev/core/testing/oidcissuer"
)

// TestClaimsAndRules proves each CEL field of the spec is in force at authentication time: the
// mappings make the identity, and each rule lets the right token in and keeps the other out.
func TestClaimsAndRules(t *testing.T) {
	iss := oidcissuer.New(t)
	alice := map[string]any{"aud": audience, "sub": "alice-id", "email": "alice@example.com", "email_verified": true,
		"username": "alice", "groups": []string{"devs", "ops"}, "tenant": "acme", "hd": "example.com"}
	mallory := map[string]any{"aud": audience, "sub": "mallory-id", "email": "mallory@evil.example", "email_verified": false,
		"username": "mallory", "groups": []string{"devs"}, "tenant": "other", "hd": "evil.example"}

	type want struct {
		username string
		groups   []string
		extra    map[string][]string
	}
	tests := []struct {
		name                 string
		cfg                  Config
		wantAlice, wantMally *want // nil: refused
	}{
		{
			name:      "username expression",
			cfg:       Config{Claims: authv1alpha1.JWTTokenClaims{UsernameExpression: `"oidc:" + claims.sub`}},
			wantAlice: &want{username: "oidc:alice-id", groups: []string{"devs", "ops"}},
			wantMally: &want{username: "oidc:mallory-id", groups: []string{"devs"}},
		},
		{
			name: "groups expression",
			cfg: Config{Claims: authv1alpha1.JWTTokenClaims{
				GroupsExpression: `dyn(claims.groups).map(g, "team:" + g) + [claims.tenant]`,
			}},
			wantAlice: &want{username: "alice", groups: []string{"team:devs", "team:ops", "acme"}},
			wantMally: &want{username: "mallory", groups: []string{"team:devs", "other"}},
		},
		{
			name: "extra",
			cfg: Config{Claims: authv1alpha1.JWTTokenClaims{Extra: []authv1alpha1.ExtraMapping{
				{Key: "example.com/tenant", ValueExpression: "claims.tenant"},
				{Key: "example.com/nothing", ValueExpression: "null"},
			}}},
			wantAlice: &want{username: "alice", groups: []string{"devs", "ops"}, extra: map[string][]string{"example.com/tenant": {"acme"}}},
			wantMally: &want{username: "mallory", groups: []string{"devs"}, extra: map[string][]string{"example.com/tenant": {"other"}}},
		},
		{
			name: "email username with a verified-email rule",
			cfg: Config{
				Claims:               authv1alpha1.JWTTokenClaims{UsernameExpression: "claims.email"},
				ClaimValidationRules: []authv1alpha1.ClaimValidationRule{{Expression: "claims.email_verified == true", Message: "email not verified"}},
			},
			wantAlice: &want{username: "alice@example.com", groups: []string{"devs", "ops"}},
		},
		{
			name:      "claim rule with required value",
			cfg:       Config{ClaimValidationRules: []authv1alpha1.ClaimValidationRule{{Claim: "hd", RequiredValue: "example.com"}}},
			wantAlice: &want{username: "alice", groups: []string{"devs", "ops"}},
		},
		{
			name:      "claim rule on an absent claim",
			cfg:       Config{ClaimValidationRules: []authv1alpha1.ClaimValidationRule{{Claim: "department", RequiredValue: "x"}}},
			wantAlice: nil,
		},
		{
			name: "claim rule expression",
			cfg: Config{ClaimValidationRules: []authv1alpha1.ClaimValidationRule{
				{Expression: `claims.tenant == "acme"`, Message: "only acme"},
				{Expression: `"devs" in claims.groups`},
			}},
			wantAlice: &want{username: "alice", groups: []string{"devs", "ops"}},
		},
		{
			name: "user rule",
			cfg: Config{UserValidationRules: []authv1alpha1.UserValidationRule{
				{Expression: `!user.username.startsWith("mal")`, Message: "no mal users"},
				{Expression: `"devs" in user.groups`},
			}},
			wantAlice: &want{username: "alice", groups: []string{"devs", "ops"}},
		},
		{
			name: "user rule sees the mapped identity",
			cfg: Config{
				Claims:              authv1alpha1.JWTTokenClaims{GroupsExpression: `claims.tenant == "acme" ? ["admins"] : []`},
				UserValidationRules: []authv1alpha1.UserValidationRule{{Expression: `user.groups.size() > 0`}},
			},
			wantAlice: &want{username: "alice", groups: []string{"admins"}},
		},
		{
			name:      "username expression that yields an empty string",
			cfg:       Config{Claims: authv1alpha1.JWTTokenClaims{UsernameExpression: `claims.tenant == "acme" ? claims.username : ""`}},
			wantAlice: &want{username: "alice", groups: []string{"devs", "ops"}},
		},
		{
			name:      "username expression that fails at runtime",
			cfg:       Config{Claims: authv1alpha1.JWTTokenClaims{UsernameExpression: `claims.tenant == "acme" ? claims.username : claims.missing`}},
			wantAlice: &want{username: "alice", groups: []string{"devs", "ops"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Issuer, cfg.Audience, cfg.CABundle = iss.Issuer, audience, iss.CABundle
			authn := newAuthenticator(t, cfg)
			for _, who := range []struct {
				claims map[string]any
				want   *want
			}{{alice, tt.wantAlice}, {mallory, tt.wantMally}} {
				token, err := iss.Issue(who.claims)
				if err != nil {
					t.Fatal(err)
				}
				resp, ok, err := authn.AuthenticateToken(context.Background(), token)
				name := who.claims["username"]
				if who.want == nil {
					if ok || resp != nil {
						t.Errorf("%s: AuthenticateToken() = %+v, %v; want refused", name, resp.User, ok)
					}
					continue
				}
				if err != nil || !ok {
					t.Errorf("%s: AuthenticateToken() = %v, %v; want %+v", name, ok, err, *who.want)
					continue
				}
				u := resp.User
				if u.GetName() != who.want.username || !slices.Equal(u.GetGroups(), who.want.groups) || len(u.GetExtra()) != len(who.want.extra) {
					t.Errorf("%s: user = %q %q %v; want %+v", name, u.GetName(), u.GetGroups(), u.GetExtra(), *who.want)
				}
				for k, v := range who.want.extra {
					if !slices.Equal(u.GetExtra()[k], v) {
						t.Errorf("%s: extra %q = %q; want %q", name, k, u.GetExtra()[k], v)
					}
				}
			}
		})
	}
}

// TestNewReportsInvalidClaimsAndRules proves a spec whose mappings or rules are invalid (or whose
// CEL does not compile) gives no authenticator, and AuthenticatorValid names the spec field.
func TestNewReportsInvalidClaimsAndRules(t *testing.T) {
	iss := oidcissuer.New(t)
	tests := []struct {
		name    string
		cfg     Config
		wantMsg []string
	}{
		{name: "username claim and expression",
			cfg:     Config{Claims: authv1alpha1.JWTTokenClaims{Username: "sub", UsernameExpression: "claims.sub"}},
			wantMsg: []string{`claims.username: Invalid value: "": claim and expression can't both be set`}},
		{name: "groups claim and expression",
			cfg:     Config{Claims: authv1alpha1.JWTTokenClaims{Groups: "groups", GroupsExpression: "claims.groups"}},
			wantMsg: []string{`claims.groups: Invalid value: "": claim and expression can't both be set`}},
		{name: "username expression does not compile",
			cfg:     Config{Claims: authv1alpha1.JWTTokenClaims{UsernameExpression: "claims.sub +"}},
			wantMsg: []string{`claims.usernameExpression: Invalid value: "claims.sub +": compilation failed`}},
		{name: "groups expression uses an unknown variable",
			cfg:     Config{Claims: authv1alpha1.JWTTokenClaims{GroupsExpression: "user.groups"}},
			wantMsg: []string{`claims.groupsExpression: Invalid value: "user.groups": compilation failed`}},
		{name: "email username without email_verified",
			cfg:     Config{Claims: authv1alpha1.JWTTokenClaims{UsernameExpression: "claims.email"}},
			wantMsg: []string{`claims.usernameExpression: Invalid value: "claims.email": claims.email_verified must be used in claims.usernameExpression or claims.extra[*].valueExpression`}},
		{name: "extra key without a domain",
			cfg:     Config{Claims: authv1alpha1.JWTTokenClaims{Extra: []authv1alpha1.ExtraMapping{{Key: "tenant", ValueExpression: "claims.tenant"}}}},
			wantMsg: []string{`claims.extra[0].key: Invalid value: "tenant": must be a domain-prefixed path`}},
		{name: "extra key upper case, reserved, duplicate, with equals sign",
			cfg: Config{Claims: authv1alpha1.JWTTokenClaims{Extra: []authv1alpha1.ExtraMapping{
				{Key: "example.com/Tenant", ValueExpression: "claims.tenant"},
				{Key: "example.k8s.io/tenant", ValueExpression: "claims.tenant"},
				{Key: "example.com/a=b", ValueExpression: "claims.tenant"},
				{Key: "example.com/a=b", ValueExpression: "claims.tenant"},
			}}},
			wantMsg: []string{
				`claims.extra[0].key: Invalid value: "example.com/Tenant": must be lowercase`,
				`claims.extra[1].key: Invalid value: "example.k8s.io/tenant": k8s.io, kubernetes.io and their subdomains are reserved`,
				`claims.extra[3].key: Duplicate value: "example.com/a=b"`,
				`claims.extra[2].key: Invalid value: "example.com/a=b": Pinniped does not allow extra key names to contain equals sign`,
			}},
		{name: "extra value expression does not compile",
			cfg:     Config{Claims: authv1alpha1.JWTTokenClaims{Extra: []authv1alpha1.ExtraMapping{{Key: "example.com/t", ValueExpression: "claims.("}}}},
			wantMsg: []string{`claims.extra[0].valueExpression: Invalid value: "claims.(": compilation failed`}},
		{name: "claim rule with claim and expression",
			cfg:     Config{ClaimValidationRules: []authv1alpha1.ClaimValidationRule{{Claim: "hd", Expression: "true"}}},
			wantMsg: []string{`claimValidationRules[0]: Invalid value: "hd": claim and expression can't both be set`}},
		{name: "claim rule with neither",
			cfg:     Config{ClaimValidationRules: []authv1alpha1.ClaimValidationRule{{Message: "m"}}},
			wantMsg: []string{`claimValidationRules[0]: Required value: claim or expression is required`}},
		{name: "claim rule with claim and message, expression and required value, duplicates",
			cfg: Config{ClaimValidationRules: []authv1alpha1.ClaimValidationRule{
				{Claim: "hd", Message: "m"}, {Expression: "true", RequiredValue: "v"},
				{Claim: "hd"}, {Expression: "true"},
			}},
			wantMsg: []string{
				`claimValidationRules[0].message: Invalid value: "m"`,
				`claimValidationRules[1].requiredValue: Invalid value: "v"`,
				`claimValidationRules[2].claim: Duplicate value: "hd"`,
				`claimValidationRules[3].expression: Duplicate value: "true"`,
			}},
		{name: "claim rule that is not a bool",
			cfg:     Config{ClaimValidationRules: []authv1alpha1.ClaimValidationRule{{Expression: "claims.sub"}}},
			wantMsg: []string{`claimValidationRules[0].expression: Invalid value: "claims.sub": must evaluate to bool`}},
		{name: "user rule that is not a bool, and a duplicate",
			cfg: Config{UserValidationRules: []authv1alpha1.UserValidationRule{
				{Expression: "user.username"}, {Expression: "true"}, {Expression: "true"},
			}},
			wantMsg: []string{
				`userValidationRules[0].expression: Invalid value: "user.username": must evaluate to bool`,
				`userValidationRules[2].expression: Duplicate value: "true"`,
			}},
		{name: "user rule over claims",
			cfg:     Config{UserValidationRules: []authv1alpha1.UserValidationRule{{Expression: `claims.sub == "x"`}}},
			wantMsg: []string{`userValidationRules[0].expression: Invalid value: "claims.sub == \"x\"": compilation failed`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Issuer, cfg.Audience, cfg.CABundle = iss.Issuer, audience, iss.CABundle
			authn, result := New(context.Background(), cfg)
			if authn != nil {
				authn.Close()
				t.Fatal("New() returned an authenticator for an invalid spec")
			}
			assertChecks(t, result, authv1alpha1.ConditionAuthenticatorValid, authv1alpha1.ReasonInvalidAuthenticator, "")
			msg := result[len(result)-1].Message
			if strings.Contains(msg, "claimMappings") {
				t.Errorf("message %q names the Kubernetes field claimMappings, not the spec's", msg)
			}
			for _, want := range tt.wantMsg {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q\nlacks %q", msg, want)
				}
			}
		})
	}
}
