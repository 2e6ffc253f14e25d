package federationdomain

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

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
	"sealion.dev/servers/supervisor/internal/sessionpolicy"
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
	sessionsValid    = configv1alpha1.ConditionSessionLifetimesValid
	ready            = configv1alpha1.ConditionReady
)

// conds returns "Status/Reason" per condition type.
func conds(c []metav1.Condition) map[string]string {
	out := map[string]string{}
	for _, cond := range c {
		out[cond.Type] = string(cond.Status) + "/" + cond.Reason
	}
	return out
}

// Upstream Pinniped's messages of the true conditions.
var successMessages = map[string]string{
	issuerURLValid:   "spec.issuer is a valid URL",
	issuerIsUnique:   "spec.issuer is unique among all FederationDomains",
	oneTLSSecret:     "all FederationDomains are using the same TLS secret when using the same hostname in the spec.issuer URL",
	idpsFound:        "the resources specified by .spec.identityProviders[].objectRef were found",
	displayNames:     "the names specified by .spec.identityProviders[].displayName are unique",
	apiGroupValid:    "the API groups specified by .spec.identityProviders[].objectRef.apiGroup are recognized",
	kindValid:        "the kinds specified by .spec.identityProviders[].objectRef.kind are recognized",
	expressionsValid: "the expressions specified by .spec.identityProviders[].transforms.expressions[] are valid",
	examplesPassed:   "the examples specified by .spec.identityProviders[].transforms.examples[] had no errors",
}

// cond is an expected condition other than Success.
type cond struct{ status, reason, message string }

func falseCond(reason, message string) cond { return cond{"False", reason, message} }

func unknownCond(message string) cond { return cond{"Unknown", "UnableToValidate", message} }

func legacyOneCond(name string) cond {
	return cond{"True", "LegacyConfigurationSuccess", `no resources were specified by .spec.identityProviders[].objectRef but exactly one identity provider resource has been found: using "` +
		name + `" as identity provider: please explicitly list identity providers in .spec.identityProviders (this legacy configuration mode may be removed in a future version of Pinniped)`}
}

var notReady = falseCond("NotReady", "the FederationDomain is not ready: see other conditions for details")

// expected returns all ten conditions, sorted by type as upstream stores them: those of other
// True/Success with upstream's message, and Ready False unless all the others are True.
func expected(issuerURL string, other map[string]cond) []metav1.Condition {
	out := []metav1.Condition{}
	allTrue := true
	for typ, msg := range successMessages {
		c := metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "Success", Message: msg}
		if o, ok := other[typ]; ok {
			c = metav1.Condition{Type: typ, Status: metav1.ConditionStatus(o.status), Reason: o.reason, Message: o.message}
		}
		allTrue = allTrue && c.Status == metav1.ConditionTrue
		out = append(out, c)
	}
	r := metav1.Condition{Type: ready, Status: metav1.ConditionTrue, Reason: "Success",
		Message: "the FederationDomain is ready and its endpoints are available: the discovery endpoint is " + issuerURL + "/.well-known/openid-configuration"}
	if !allTrue {
		r = metav1.Condition{Type: ready, Status: metav1.ConditionFalse, Reason: notReady.reason, Message: notReady.message}
	}
	out = append(out, r)
	slices.SortFunc(out, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
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
	const cannotParse = "unable to check if spec.issuer is unique among all FederationDomains because URL cannot be parsed"
	const cannotParseTLS = "unable to check if all FederationDomains are using the same TLS secret when using the same hostname in the spec.issuer URL because URL cannot be parsed"
	tests := []struct {
		issuer   string
		problem  string // IssuerURLValid's message; none when valid
		unparsed bool   // the uniqueness checks cannot run
	}{
		{issuer: "https://tuna.com"},
		{issuer: "https://tuna.com/fish/marlin"},
		{issuer: "https://Example.com:8443/a/b"},
		{issuer: "https://10.0.0.1/issuer"},
		// Upstream accepts these: url.Parse leaves no query or fragment, and it checks no path segments.
		{issuer: "https://example.com/a?"},
		{issuer: "https://example.com/a#"},
		{issuer: "https://example.com/a/../b"},
		{issuer: "", problem: "federation domain must have an issuer"},
		{issuer: "https://example.com\x7f", problem: `could not parse issuer as URL: parse "https://example.com\x7f": net/url: invalid control character in URL`, unparsed: true},
		{issuer: "https://exa mple.com", problem: `could not parse issuer as URL: parse "https://exa mple.com": invalid character " " in host name`, unparsed: true},
		{issuer: "https://", problem: "issuer must have a hostname"},
		{issuer: "https://:443/a", problem: "issuer must have a hostname"},
		{issuer: "tuna.com", problem: `issuer must have "https" scheme`},
		{issuer: "ftp://tuna.com", problem: `issuer must have "https" scheme`},
		{issuer: "http://tuna.com", problem: `issuer must have "https" scheme`},
		{issuer: "https://tuna.com/fish#some-frag", problem: "issuer must not have fragment"},
		{issuer: "https://tuna.com?some=query", problem: "issuer must not have query"},
		{issuer: "https://username@tuna.com", problem: "issuer must not have username or password"},
		{issuer: "https://username:password@tuna.com", problem: "issuer must not have username or password"},
		{issuer: "https://tuna.com/", problem: "issuer must not have trailing slash in path"},
		{issuer: "https://tuna.com/fish/?q=1", problem: "issuer must not have trailing slash in path"},
	}
	for _, tt := range tests {
		t.Run(tt.issuer, func(t *testing.T) {
			r := newValidator(dex).validate(context.Background(), []*configv1alpha1.FederationDomain{fd("fd", tt.issuer)})[0]
			other := map[string]cond{idpsFound: legacyOneCond("dex")}
			if tt.problem != "" {
				other[issuerURLValid] = falseCond("InvalidIssuerURL", tt.problem)
			}
			if tt.unparsed {
				other[issuerIsUnique] = unknownCond(cannotParse)
				other[oneTLSSecret] = unknownCond(cannotParseTLS)
			}
			if diff := cmp.Diff(expected(tt.issuer, other), []metav1.Condition(r.conditions)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if r.servable != (tt.problem == "") {
				t.Errorf("servable %v", r.servable)
			}
			wantPhase := configv1alpha1.PhaseReady
			if tt.problem != "" {
				wantPhase = configv1alpha1.PhaseError
			}
			if got := r.conditions.phase(); got != wantPhase {
				t.Errorf("phase %s, want %s", got, wantPhase)
			}
		})
	}
}

func TestValidateAcrossFederationDomains(t *testing.T) {
	fds := []*configv1alpha1.FederationDomain{
		fd("a", "https://dup.example.com/issuer"),
		fd("b", "https://DUP.example.com/issuer"),      // the same issuer
		fd("c", "https://dup.example.com/other"),       // same host, another path: fine
		fd("c2", "https://dup.example.com:443/issuer"), // upstream compares the port as written
		fd("c3", "http://dup.example.com/other"),       // invalid, but unique: another scheme
		fd("c4", "https://dup.example.com/issuer/"),    // invalid, but unique: another path
		fd("c5", "ftp://Dup.example.com/issuer"),       // invalid, and duplicate
		fd("c6", "ftp://dup.example.com/issuer"),       // of each other
		withTLS(fd("d", "https://tls.example.com/one"), "secret-1"),
		withTLS(fd("e", "https://TLS.example.com:8443/two"), "secret-2"), // same hostname, another Secret
		fd("f", "https://tls.example.com/three"),                         // the hostname's conflict is its too
		withTLS(fd("g", "https://agreed.example.com/one"), "secret-3"),
		withTLS(fd("h", "https://agreed.example.com/two"), "secret-3"),
		fd("i", "https://agreed.example.com/three"), // naming none agrees with any
		withTLS(fd("j", "https://blank.example.com/one"), ""),
		withTLS(fd("k", "https://blank.example.com/two"), "secret-4"), // an empty name is a different one
	}
	results := newValidator(dex).validate(context.Background(), fds)

	legacy := legacyOneCond("dex")
	dup := map[string]cond{idpsFound: legacy, issuerIsUnique: falseCond("DuplicateIssuer",
		"multiple FederationDomains have the same spec.issuer URL: these URLs must be unique (can use different hosts or paths)")}
	ok := map[string]cond{idpsFound: legacy}
	tlsConflict := map[string]cond{idpsFound: legacy, oneTLSSecret: falseCond("DifferentSecretRefsFound",
		"when different FederationDomains are using the same hostname in the spec.issuer URL then they must also use the same TLS secretRef: different secretRefs found")}
	with := func(base map[string]cond, typ string, c cond) map[string]cond {
		out := maps.Clone(base)
		out[typ] = c
		return out
	}
	wantOther := map[string]map[string]cond{
		"a": dup, "b": dup, "c": ok, "c2": ok,
		"c3": with(ok, issuerURLValid, falseCond("InvalidIssuerURL", `issuer must have "https" scheme`)),
		"c4": with(ok, issuerURLValid, falseCond("InvalidIssuerURL", "issuer must not have trailing slash in path")),
		"c5": with(dup, issuerURLValid, falseCond("InvalidIssuerURL", `issuer must have "https" scheme`)),
		"c6": with(dup, issuerURLValid, falseCond("InvalidIssuerURL", `issuer must have "https" scheme`)),
		"d":  tlsConflict, "e": tlsConflict, "f": tlsConflict,
		"g": ok, "h": ok, "i": ok,
		"j": tlsConflict, "k": tlsConflict,
	}
	for i, r := range results {
		name := fds[i].Name
		want := expected(fds[i].Spec.Issuer, wantOther[name])
		if diff := cmp.Diff(want, []metav1.Condition(r.conditions)); diff != "" {
			t.Errorf("%s: conditions (-want +got):\n%s", name, diff)
		}
		if wantServable := want[slices.IndexFunc(want, func(c metav1.Condition) bool { return c.Type == ready })].Status == metav1.ConditionTrue; r.servable != wantServable {
			t.Errorf("%s: servable %v, want %v", name, r.servable, wantServable)
		}
	}
}

func TestValidateLegacyIdentityProvider(t *testing.T) {
	tests := []struct {
		name    string
		objects []idpObject
		want    cond
		idps    []string
	}{
		{name: "none", want: falseCond("LegacyConfigurationIdentityProviderNotFound",
			"no resources were specified by .spec.identityProviders[].objectRef and no identity provider resources have been found: please create an identity provider resource")},
		{name: "one", objects: []idpObject{ldap}, want: legacyOneCond("ldap"), idps: []string{"ldap"}},
		{name: "two", objects: []idpObject{ldap, dex}, want: falseCond("IdentityProviderNotSpecified",
			"no resources were specified by .spec.identityProviders[].objectRef and 2 identity provider resources have been found: please update .spec.identityProviders to specify which identity providers this federation domain should use")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newValidator(tt.objects...).validate(context.Background(), []*configv1alpha1.FederationDomain{fd("fd", "https://example.com")})[0]
			if diff := cmp.Diff(expected("https://example.com", map[string]cond{idpsFound: tt.want}), []metav1.Condition(r.conditions)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.idps, displayNamesOf(r.idps)); diff != "" {
				t.Errorf("identity providers (-want +got):\n%s", diff)
			}
			// As Pinniped, the endpoints are served only when every condition is true.
			if want := tt.want.status == "True"; r.servable != want {
				t.Errorf("servable = %v, want %v", r.servable, want)
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

// exampleFailures is how the examples of failingExamples fail for spec.identityProviders[idp].
func exampleFailures(idp int) string {
	return fmt.Sprintf(".spec.identityProviders[%d].transforms.examples[0] example failed:\nexpected: username \"pinny\"\nactual:   username \"ldap:pinny\"\n\n"+
		".spec.identityProviders[%d].transforms.examples[1] example failed:\n"+
		"expected: authentication rejection message \"Authentication was rejected by a configured policy\"\nactual:   authentication rejection message \"go away\"", idp, idp)
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
	failingExamples := policy.DeepCopy()
	failingExamples.Examples[0].Expects.Username = "pinny"
	failingExamples.Examples[1].Expects.Message = ""
	badExpression := policy.DeepCopy()
	badExpression.Expressions[1].Expression = `username + 1`
	badExpression.Expressions[0].Expression = `username`

	tests := []struct {
		name    string
		entries []configv1alpha1.FederationDomainIdentityProvider
		want    map[string]cond
		idps    []string
	}{
		{
			name:    "all found, sorted by display name, with transforms",
			entries: []configv1alpha1.FederationDomainIdentityProvider{ref("Zed Dex", "OIDCIdentityProvider", "dex"), withTransforms(ref("Corp LDAP", "LDAPIdentityProvider", "ldap"), policy)},
			idps:    []string{"Corp LDAP", "Zed Dex"},
		},
		{
			name: "missing objects",
			entries: []configv1alpha1.FederationDomainIdentityProvider{ref("Dex", "OIDCIdentityProvider", "dex"), ref("Gone", "GitHubIdentityProvider", "gone"),
				ref("Wrong kind", "LDAPIdentityProvider", "dex")},
			want: map[string]cond{idpsFound: falseCond("IdentityProvidersObjectRefsNotFound",
				`cannot find resource specified by .spec.identityProviders[1].objectRef (with name "gone")`+"\n\n"+
					`cannot find resource specified by .spec.identityProviders[2].objectRef (with name "dex")`)},
			idps: []string{"Dex"},
		},
		{
			name: "duplicate display names are all left out",
			entries: []configv1alpha1.FederationDomainIdentityProvider{ref("Same", "OIDCIdentityProvider", "dex"), ref("Same", "LDAPIdentityProvider", "ldap"),
				ref("Also", "LDAPIdentityProvider", "ldap"), ref("Other", "LDAPIdentityProvider", "ldap"), ref("Also", "LDAPIdentityProvider", "ldap")},
			want: map[string]cond{displayNames: falseCond("DuplicateDisplayNames",
				`the names specified by .spec.identityProviders[].displayName contain duplicates: "Also", "Same"`)},
			idps: []string{"Other"},
		},
		{
			name:    "API group of another suffix, or none",
			entries: []configv1alpha1.FederationDomainIdentityProvider{badGroup, noGroup, ref("LDAP", "LDAPIdentityProvider", "ldap"), badGroup},
			want: map[string]cond{
				apiGroupValid: falseCond("APIGroupUnrecognized",
					`some API groups specified by .spec.identityProviders[].objectRef.apiGroup are not recognized (should be "idp.supervisor.tuna.io"): "", "idp.supervisor.other.io", "idp.supervisor.other.io"`),
				idpsFound: falseCond("IdentityProvidersObjectRefsNotFound",
					`cannot find resource specified by .spec.identityProviders[0].objectRef (with name "dex")`+"\n\n"+
						`cannot find resource specified by .spec.identityProviders[1].objectRef (with name "dex")`+"\n\n"+
						`cannot find resource specified by .spec.identityProviders[3].objectRef (with name "dex")`),
				displayNames: falseCond("DuplicateDisplayNames", `the names specified by .spec.identityProviders[].displayName contain duplicates: "Bad group"`),
			},
			idps: []string{"LDAP"},
		},
		{
			name:    "unknown kinds",
			entries: []configv1alpha1.FederationDomainIdentityProvider{ref("SAML", "SAMLIdentityProvider", "saml"), ref("None", "", "x")},
			want: map[string]cond{
				kindValid: falseCond("KindUnrecognized",
					`some kinds specified by .spec.identityProviders[].objectRef.kind are not recognized (should be one of "ActiveDirectoryIdentityProvider", "GitHubIdentityProvider", "LDAPIdentityProvider", "OIDCIdentityProvider"): "", "SAMLIdentityProvider"`),
				idpsFound: falseCond("IdentityProvidersObjectRefsNotFound",
					`cannot find resource specified by .spec.identityProviders[0].objectRef (with name "saml")`+"\n\n"+
						`cannot find resource specified by .spec.identityProviders[1].objectRef (with name "x")`),
			},
		},
		{
			name: "failing examples leave their identity provider out",
			entries: []configv1alpha1.FederationDomainIdentityProvider{ref("Dex", "OIDCIdentityProvider", "dex"),
				withTransforms(ref("LDAP", "LDAPIdentityProvider", "ldap"), *failingExamples), withTransforms(ref("LDAP 2", "LDAPIdentityProvider", "ldap"), *failingExamples)},
			want: map[string]cond{examplesPassed: falseCond("TransformsExamplesFailed", exampleFailures(1)+"\n\n"+exampleFailures(2))},
			idps: []string{"Dex"},
		},
		{
			name: "invalid expressions leave their identity provider out and their examples unchecked",
			entries: []configv1alpha1.FederationDomainIdentityProvider{withTransforms(ref("LDAP", "LDAPIdentityProvider", "ldap"), *badExpression),
				ref("Dex", "OIDCIdentityProvider", "dex"), withTransforms(ref("LDAP 2", "LDAPIdentityProvider", "ldap"), configv1alpha1.FederationDomainTransforms{
					Expressions: []configv1alpha1.FederationDomainTransformsExpression{{Type: configv1alpha1.TransformsExpressionTypeGroups, Expression: " "}},
				})},
			want: map[string]cond{
				expressionsValid: falseCond("InvalidTransformsExpressions",
					"spec.identityProvider[0].transforms.expressions[0].expression was invalid:\n"+`CEL expression should return type "bool" but returns type "string"`+"\n\n"+
						"spec.identityProvider[0].transforms.expressions[1].expression was invalid:\n"+
						"CEL expression compile error: ERROR: <input>:1:10: found no matching overload for '_+_' applied to '(string, int)'\n"+
						" | username + 1\n"+
						" | .........^"+"\n\n"+
						"spec.identityProvider[2].transforms.expressions[0].expression was invalid:\ncannot compile empty CEL expression"),
				examplesPassed: falseCond("TransformsExamplesFailed",
					"unable to check if the examples specified by .spec.identityProviders[0].transforms.examples[] had errors because an expression was invalid\n\n"+
						"unable to check if the examples specified by .spec.identityProviders[2].transforms.examples[] had errors because an expression was invalid"),
			},
			idps: []string{"Dex"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newValidator(dex, ldap).validate(context.Background(), []*configv1alpha1.FederationDomain{fd("fd", "https://example.com", tt.entries...)})[0]
			if diff := cmp.Diff(expected("https://example.com", tt.want), []metav1.Condition(r.conditions)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.idps, displayNamesOf(r.idps)); diff != "" {
				t.Errorf("identity providers (-want +got):\n%s", diff)
			}
			// As Pinniped, any problem with the identity providers stops the endpoints from being
			// served.
			if want := r.conditions.ok(configv1alpha1.ConditionReady); r.servable != want {
				t.Errorf("servable = %v, want %v (Ready)", r.servable, want)
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

// spec.sessionLifetimes is reported by a condition of ours only when set; an out-of-range value
// (one the CRD would have refused) makes the FederationDomain not ready, and is never clamped.
func TestValidateSessionLifetimes(t *testing.T) {
	const issuerURL = "https://tuna.com"
	tests := []struct {
		name      string
		lifetimes *configv1alpha1.SessionLifetimes
		want      *cond // SessionLifetimesValid; nil when it is not reported
		policy    sessionpolicy.Policy
	}{
		{name: "unset", policy: sessionpolicy.Default},
		{name: "empty", lifetimes: &configv1alpha1.SessionLifetimes{},
			want:   &cond{"True", "Success", "sessions last at most 9h0m0s, with no idle timeout"},
			policy: sessionpolicy.Default},
		{name: "both", lifetimes: &configv1alpha1.SessionLifetimes{MaxSessionSeconds: ptr.To[int32](3600), IdleTimeoutSeconds: ptr.To[int32](900)},
			want:   &cond{"True", "Success", "sessions last at most 1h0m0s, or until idle for 15m0s"},
			policy: sessionpolicy.Policy{Max: time.Hour, Idle: 15 * time.Minute}},
		{name: "a week", lifetimes: &configv1alpha1.SessionLifetimes{MaxSessionSeconds: ptr.To[int32](604800)},
			want:   &cond{"True", "Success", "sessions last at most 168h0m0s, with no idle timeout"},
			policy: sessionpolicy.Policy{Max: 7 * 24 * time.Hour}},
		{name: "too short", lifetimes: &configv1alpha1.SessionLifetimes{MaxSessionSeconds: ptr.To[int32](59)},
			want: &cond{"False", "InvalidSessionLifetimes", "spec.sessionLifetimes.maxSessionSeconds must be between 60 and 604800, not 59"}},
		{name: "too long", lifetimes: &configv1alpha1.SessionLifetimes{MaxSessionSeconds: ptr.To[int32](604801)},
			want: &cond{"False", "InvalidSessionLifetimes", "spec.sessionLifetimes.maxSessionSeconds must be between 60 and 604800, not 604801"}},
		{name: "idle negative", lifetimes: &configv1alpha1.SessionLifetimes{IdleTimeoutSeconds: ptr.To[int32](-1)},
			want: &cond{"False", "InvalidSessionLifetimes", "spec.sessionLifetimes.idleTimeoutSeconds must be between 60 and 604800, not -1"}},
		{name: "idle over the default maximum", lifetimes: &configv1alpha1.SessionLifetimes{IdleTimeoutSeconds: ptr.To[int32](36000)},
			want: &cond{"False", "InvalidSessionLifetimes", "spec.sessionLifetimes.idleTimeoutSeconds (36000) must not exceed the session's maximum length (32400 seconds)"}},
		{name: "idle over the maximum", lifetimes: &configv1alpha1.SessionLifetimes{MaxSessionSeconds: ptr.To[int32](600), IdleTimeoutSeconds: ptr.To[int32](601)},
			want: &cond{"False", "InvalidSessionLifetimes", "spec.sessionLifetimes.idleTimeoutSeconds (601) must not exceed the session's maximum length (600 seconds)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fd("fd", issuerURL)
			f.Spec.SessionLifetimes = tt.lifetimes
			r := newValidator(dex).validate(context.Background(), []*configv1alpha1.FederationDomain{f})[0]
			other := map[string]cond{idpsFound: legacyOneCond("dex")}
			want := expected(issuerURL, other)
			if tt.want != nil {
				want = append(want, metav1.Condition{Type: sessionsValid, Status: metav1.ConditionStatus(tt.want.status), Reason: tt.want.reason, Message: tt.want.message})
				slices.SortFunc(want, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
				if tt.want.status != "True" {
					i := slices.IndexFunc(want, func(c metav1.Condition) bool { return c.Type == ready })
					want[i] = metav1.Condition{Type: ready, Status: metav1.ConditionFalse, Reason: notReady.reason, Message: notReady.message}
				}
			}
			if diff := cmp.Diff(want, []metav1.Condition(r.conditions)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if ok := tt.want == nil || tt.want.status == "True"; r.servable != ok || (ok && r.sessions != tt.policy) {
				t.Errorf("servable %v with sessions %+v; want servable %v with %+v", r.servable, r.sessions, ok, tt.policy)
			}
		})
	}
}
