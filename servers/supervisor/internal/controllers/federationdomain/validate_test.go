package federationdomain

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/kinds"
	"sealion.dev/servers/supervisor/internal/idtransform"
	"sealion.dev/servers/supervisor/internal/issuer"
)

const (
	issuerURLValid   = configv1alpha1.ConditionIssuerURLValid
	issuerIsUnique   = configv1alpha1.ConditionIssuerIsUnique
	oneTLSSecret     = configv1alpha1.ConditionOneTLSSecretPerIssuerHostname
	idpsFound        = configv1alpha1.ConditionIdentityProvidersFound
	displayNames     = configv1alpha1.ConditionIdentityProvidersDisplayNamesUnique
	apiGroupValid    = configv1alpha1.ConditionIdentityProvidersObjectRefAPIGroupSuffixValid
	kindValid        = configv1alpha1.ConditionIdentityProvidersObjectRefKindValid
	expressionsValid = configv1alpha1.ConditionTransformsExpressionsValid
	examplesPassed   = configv1alpha1.ConditionTransformsExamplesPassed
	ready            = configv1alpha1.ConditionReady
)

// want is the expected status and reason of some conditions; the others must be True/Success.
type want map[string]string

// conds returns "Status/Reason" per condition type.
func conds(c conditions) map[string]string {
	out := map[string]string{}
	for _, cond := range c {
		out[cond.Type] = string(cond.Status) + "/" + cond.Reason
	}
	return out
}

// expected fills in True/Success for every condition want does not name.
func expected(w want) map[string]string {
	out := map[string]string{}
	for _, typ := range conditionTypes {
		out[typ] = "True/Success"
	}
	for k, v := range w {
		out[k] = v
	}
	return out
}

func fd(name, issuerURL string, idps ...configv1alpha1.FederationDomainIdentityProvider) *configv1alpha1.FederationDomain {
	return &configv1alpha1.FederationDomain{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "supervisor", UID: types.UID("uid-" + name), Generation: 1},
		Spec:       configv1alpha1.FederationDomainSpec{Issuer: issuerURL, IdentityProviders: idps},
	}
}

func withTLS(f *configv1alpha1.FederationDomain, secret string) *configv1alpha1.FederationDomain {
	f.Spec.TLS = &configv1alpha1.FederationDomainTLSSpec{SecretName: secret}
	return f
}

func ref(displayName, kind, name string) configv1alpha1.FederationDomainIdentityProvider {
	return configv1alpha1.FederationDomainIdentityProvider{
		DisplayName: displayName,
		ObjectRef:   corev1.TypedLocalObjectReference{APIGroup: ptr.To(idpv1alpha1.GroupName), Kind: kind, Name: name},
	}
}

func withTransforms(e configv1alpha1.FederationDomainIdentityProvider, t configv1alpha1.FederationDomainTransforms) configv1alpha1.FederationDomainIdentityProvider {
	e.Transforms = t
	return e
}

func testInventory(objects ...idpObject) inventory {
	inv := inventory{}
	for _, o := range objects {
		if inv[o.kind] == nil {
			inv[o.kind] = map[string]idpObject{}
		}
		inv[o.kind][o.name] = o
	}
	return inv
}

var (
	dex  = idpObject{kind: "OIDCIdentityProvider", name: "dex", uid: "dex-uid", typ: issuer.TypeOIDC, flows: connectors.BrowserFlows}
	ldap = idpObject{kind: "LDAPIdentityProvider", name: "ldap", uid: "ldap-uid", typ: issuer.TypeLDAP, flows: connectors.PasswordFlows}
)

func newValidator(objects ...idpObject) validator {
	return validator{idpGroup: idpv1alpha1.GroupName, idpGroupShown: "idp.supervisor.tuna.io", kinds: kindNames(kinds.All), inventory: testInventory(objects...)}
}

func TestValidateIssuerURL(t *testing.T) {
	for issuerURL, problem := range map[string]string{
		"https://example.com":          "",
		"https://example.com/":         "",
		"https://Example.com:8443/a/b": "",
		"https://10.0.0.1/issuer":      "",
		"http://example.com":           "https scheme",
		"example.com/issuer":           "https scheme",
		"https://":                     "no hostname",
		"https://:443/a":               "no hostname",
		"https://user:pw@example.com":  "username or password",
		"https://example.com?x=1":      "query parameters",
		"https://example.com/a?":       "query parameters",
		"https://example.com/a#frag":   "fragment",
		"https://example.com/a#":       "fragment",
		"https://example.com/a/../b":   "'..' segments",
		"https://example.com//a":       "segments",
		"https://example.com/a/.well-known/openid-configuration": ".well-known",
		"https://example.com:/a":                                 "empty port",
		"https://exa mple.com":                                   "not a URL",
	} {
		t.Run(issuerURL, func(t *testing.T) {
			r := newValidator(dex).validate(context.Background(), []*configv1alpha1.FederationDomain{fd("fd", issuerURL)})[0]
			got := conds(r.conditions)
			if problem == "" {
				if diff := cmp.Diff(expected(want{idpsFound: "True/LegacyConfigurationSuccess"}), got); diff != "" {
					t.Errorf("conditions (-want +got):\n%s", diff)
				}
				if !r.servable {
					t.Error("a valid FederationDomain is not servable")
				}
				return
			}
			if diff := cmp.Diff(expected(want{
				issuerURLValid: "False/InvalidIssuerURL", issuerIsUnique: "Unknown/UnableToValidate", oneTLSSecret: "Unknown/UnableToValidate",
				idpsFound: "True/LegacyConfigurationSuccess", ready: "False/NotReady",
			}), got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if msg := message(r.conditions, issuerURLValid); !strings.Contains(msg, problem) {
				t.Errorf("message %q does not mention %q", msg, problem)
			}
			if r.servable {
				t.Error("an invalid issuer is servable")
			}
		})
	}
}

func message(c conditions, typ string) string {
	for _, cond := range c {
		if cond.Type == typ {
			return cond.Message
		}
	}
	return ""
}

func TestValidateAcrossFederationDomains(t *testing.T) {
	results := newValidator(dex).validate(context.Background(), []*configv1alpha1.FederationDomain{
		fd("a", "https://dup.example.com/issuer"),
		fd("b", "https://DUP.example.com:443/issuer/"), // the same issuer
		fd("c", "https://dup.example.com/other"),       // same host, another path: fine
		withTLS(fd("d", "https://tls.example.com/one"), "secret-1"),
		withTLS(fd("e", "https://tls.example.com:8443/two"), "secret-2"), // same hostname, another Secret
		fd("f", "https://tls.example.com/three"),                         // and another without one
		withTLS(fd("g", "https://agreed.example.com/one"), "secret-3"),
		withTLS(fd("h", "https://agreed.example.com/two"), "secret-3"),
		fd("i", "http://invalid.example.com"),
	})
	got := map[string]map[string]string{}
	for _, r := range results {
		got[r.fd.Name] = conds(r.conditions)
	}
	legacyOK := "True/LegacyConfigurationSuccess"
	dup := expected(want{issuerIsUnique: "False/DuplicateIssuer", idpsFound: legacyOK, ready: "False/NotReady"})
	ok := expected(want{idpsFound: legacyOK})
	tlsConflict := expected(want{oneTLSSecret: "False/DifferentSecretRefsFound", idpsFound: legacyOK, ready: "False/NotReady"})
	wantAll := map[string]map[string]string{
		"a": dup, "b": dup, "c": ok,
		"d": tlsConflict, "e": tlsConflict, "f": tlsConflict,
		"g": ok, "h": ok,
		"i": expected(want{
			issuerURLValid: "False/InvalidIssuerURL", issuerIsUnique: "Unknown/UnableToValidate", oneTLSSecret: "Unknown/UnableToValidate",
			idpsFound: legacyOK, ready: "False/NotReady",
		}),
	}
	if diff := cmp.Diff(wantAll, got); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	for _, r := range results {
		if wantServable := got[r.fd.Name][ready] == "True/Success"; r.servable != wantServable {
			t.Errorf("%s: servable %v, want %v", r.fd.Name, r.servable, wantServable)
		}
	}
	if msg := message(results[3].conditions, oneTLSSecret); !strings.Contains(msg, `"", "secret-1", "secret-2"`) {
		t.Errorf("TLS conflict message does not list the Secrets: %q", msg)
	}
}

func TestValidateLegacyIdentityProvider(t *testing.T) {
	tests := []struct {
		name    string
		objects []idpObject
		want    string
		idps    []string
	}{
		{name: "none", want: "False/LegacyConfigurationIdentityProviderNotFound"},
		{name: "one", objects: []idpObject{ldap}, want: "True/LegacyConfigurationSuccess", idps: []string{"ldap"}},
		{name: "several", objects: []idpObject{ldap, dex}, want: "False/IdentityProviderNotSpecified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newValidator(tt.objects...).validate(context.Background(), []*configv1alpha1.FederationDomain{fd("fd", "https://example.com")})[0]
			w := want{idpsFound: tt.want}
			if !strings.HasPrefix(tt.want, "True") {
				w[ready] = "False/NotReady"
			}
			if diff := cmp.Diff(expected(w), conds(r.conditions)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.idps, displayNamesOf(r.idps)); diff != "" {
				t.Errorf("identity providers (-want +got):\n%s", diff)
			}
			// The endpoints are served even without an identity provider.
			if !r.servable {
				t.Error("not servable")
			}
		})
	}
}

func displayNamesOf(idps []issuer.IdentityProvider) []string {
	var out []string
	for _, idp := range idps {
		out = append(out, idp.DisplayName)
	}
	return out
}

func TestValidateIdentityProviders(t *testing.T) {
	badGroup := ref("Bad group", "OIDCIdentityProvider", "dex")
	badGroup.ObjectRef.APIGroup = ptr.To("idp.supervisor.other.io")
	noGroup := ref("No group", "OIDCIdentityProvider", "dex")
	noGroup.ObjectRef.APIGroup = nil
	policy := configv1alpha1.FederationDomainTransforms{
		Expressions: []configv1alpha1.FederationDomainTransformsExpression{
			{Type: configv1alpha1.TransformsExpressionTypePolicy, Expression: `username != "mallory"`, Message: "go away"},
			{Type: configv1alpha1.TransformsExpressionTypeUsername, Expression: `"ldap:" + username`},
		},
		Examples: []configv1alpha1.FederationDomainTransformsExample{
			{Username: "pinny", Expects: configv1alpha1.FederationDomainTransformsExampleExpects{Username: "ldap:pinny"}},
			{Username: "mallory", Expects: configv1alpha1.FederationDomainTransformsExampleExpects{Rejected: true, Message: "go away"}},
		},
	}
	failingExample := policy.DeepCopy()
	failingExample.Examples[0].Expects.Username = "pinny"
	badExpression := policy.DeepCopy()
	badExpression.Expressions[1].Expression = `username + 1`

	tests := []struct {
		name     string
		entries  []configv1alpha1.FederationDomainIdentityProvider
		want     want
		idps     []string
		messages map[string]string
	}{
		{
			name:    "all found, sorted by display name, with transforms",
			entries: []configv1alpha1.FederationDomainIdentityProvider{ref("Zed Dex", "OIDCIdentityProvider", "dex"), withTransforms(ref("Corp LDAP", "LDAPIdentityProvider", "ldap"), policy)},
			idps:    []string{"Corp LDAP", "Zed Dex"},
		},
		{
			name:    "missing object",
			entries: []configv1alpha1.FederationDomainIdentityProvider{ref("Dex", "OIDCIdentityProvider", "dex"), ref("Gone", "GitHubIdentityProvider", "gone")},
			want:    want{idpsFound: "False/IdentityProvidersObjectRefsNotFound", ready: "False/NotReady"},
			idps:    []string{"Dex"},
			messages: map[string]string{
				idpsFound: `spec.identityProviders[1].objectRef (GitHubIdentityProvider "gone")`,
			},
		},
		{
			name:    "right name, wrong kind",
			entries: []configv1alpha1.FederationDomainIdentityProvider{ref("Dex", "LDAPIdentityProvider", "dex")},
			want:    want{idpsFound: "False/IdentityProvidersObjectRefsNotFound", ready: "False/NotReady"},
		},
		{
			name:    "duplicate display names are both left out",
			entries: []configv1alpha1.FederationDomainIdentityProvider{ref("Same", "OIDCIdentityProvider", "dex"), ref("Same", "LDAPIdentityProvider", "ldap"), ref("Other", "LDAPIdentityProvider", "ldap")},
			want:    want{displayNames: "False/DuplicateDisplayNames", ready: "False/NotReady"},
			idps:    []string{"Other"},
			messages: map[string]string{
				displayNames: `"Same"`,
			},
		},
		{
			name:    "API group of another suffix, or none",
			entries: []configv1alpha1.FederationDomainIdentityProvider{badGroup, noGroup, ref("LDAP", "LDAPIdentityProvider", "ldap")},
			want:    want{apiGroupValid: "False/APIGroupUnrecognized", idpsFound: "False/IdentityProvidersObjectRefsNotFound", ready: "False/NotReady"},
			idps:    []string{"LDAP"},
			messages: map[string]string{
				apiGroupValid: `must be "idp.supervisor.tuna.io"; not spec.identityProviders[0].objectRef.apiGroup "idp.supervisor.other.io", spec.identityProviders[1].objectRef.apiGroup ""`,
			},
		},
		{
			name:    "unknown kind",
			entries: []configv1alpha1.FederationDomainIdentityProvider{ref("SAML", "SAMLIdentityProvider", "saml")},
			want:    want{kindValid: "False/KindUnrecognized", idpsFound: "False/IdentityProvidersObjectRefsNotFound", ready: "False/NotReady"},
			messages: map[string]string{
				kindValid: `must be one of ActiveDirectoryIdentityProvider, GitHubIdentityProvider, LDAPIdentityProvider, OIDCIdentityProvider; not spec.identityProviders[0].objectRef.kind "SAMLIdentityProvider"`,
			},
		},
		{
			name:    "failing example leaves its identity provider out",
			entries: []configv1alpha1.FederationDomainIdentityProvider{ref("Dex", "OIDCIdentityProvider", "dex"), withTransforms(ref("LDAP", "LDAPIdentityProvider", "ldap"), *failingExample)},
			want:    want{examplesPassed: "False/TransformsExamplesFailed", ready: "False/NotReady"},
			idps:    []string{"Dex"},
			messages: map[string]string{
				examplesPassed: `spec.identityProviders[1].transforms.examples[0]: expected username "pinny", got "ldap:pinny"`,
			},
		},
		{
			name:    "invalid expression leaves its identity provider out and its examples unchecked",
			entries: []configv1alpha1.FederationDomainIdentityProvider{withTransforms(ref("LDAP", "LDAPIdentityProvider", "ldap"), *badExpression), ref("Dex", "OIDCIdentityProvider", "dex")},
			want:    want{expressionsValid: "False/InvalidTransformsExpressions", examplesPassed: "Unknown/UnableToValidate", ready: "False/NotReady"},
			idps:    []string{"Dex"},
			messages: map[string]string{
				expressionsValid: `spec.identityProviders[0].transforms.expressions[1]: username/v1 expression does not compile`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newValidator(dex, ldap).validate(context.Background(), []*configv1alpha1.FederationDomain{fd("fd", "https://example.com", tt.entries...)})[0]
			if diff := cmp.Diff(expected(tt.want), conds(r.conditions)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.idps, displayNamesOf(r.idps)); diff != "" {
				t.Errorf("identity providers (-want +got):\n%s", diff)
			}
			for typ, fragment := range tt.messages {
				if msg := message(r.conditions, typ); !strings.Contains(msg, fragment) {
					t.Errorf("%s message %q does not contain %q", typ, msg, fragment)
				}
			}
			if !r.servable {
				t.Error("identity provider problems must not stop the endpoints from being served")
			}
		})
	}
}

func TestResolvedIdentityProvider(t *testing.T) {
	r := newValidator(dex, ldap).validate(context.Background(), []*configv1alpha1.FederationDomain{fd("fd", "https://example.com",
		withTransforms(ref("LDAP", "LDAPIdentityProvider", "ldap"), configv1alpha1.FederationDomainTransforms{
			Expressions: []configv1alpha1.FederationDomainTransformsExpression{{Type: configv1alpha1.TransformsExpressionTypeUsername, Expression: `"x-" + username`}},
		}))})[0]
	if len(r.idps) != 1 {
		t.Fatalf("got %d identity providers", len(r.idps))
	}
	idp := r.idps[0]
	if idp.Type != issuer.TypeLDAP || idp.Kind != "LDAPIdentityProvider" || idp.Name != "ldap" || idp.UID != "ldap-uid" ||
		!cmp.Equal(idp.Flows, []issuer.Flow{issuer.FlowCLIPassword, issuer.FlowBrowserAuthcode}) {
		t.Errorf("unexpected identity provider %+v", idp)
	}
	// The compiled transforms travel with it, for the login endpoints.
	res, err := idp.Transforms.Evaluate(context.Background(), idtransform.Identity{Username: "pinny"})
	if err != nil || res.Username != "x-pinny" {
		t.Errorf("transforms gave %+v, %v", res, err)
	}
}

func TestConditionOrderAndReady(t *testing.T) {
	r := newValidator(dex).validate(context.Background(), []*configv1alpha1.FederationDomain{fd("fd", "https://example.com")})[0]
	var types []string
	for _, c := range r.conditions {
		types = append(types, c.Type)
	}
	if diff := cmp.Diff(conditionTypes, types); diff != "" {
		t.Errorf("condition order (-want +got):\n%s", diff)
	}
	if r.conditions.phase() != configv1alpha1.PhaseReady {
		t.Errorf("phase %s", r.conditions.phase())
	}
}
