// Package clientcheck checks OIDCClients: Validate turns a client and its storage Secret into the
// status conditions and phase the Supervisor reports, and the secret hashes it may accept.
package clientcheck

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	"sealion.dev/servers/supervisor/internal/clientsecrets"
)

// The check of spec.allowedRedirectURIs is ours: Pinniped relies on the CRD's pattern alone. It
// catches clients stored while the CRD's validation was different, before they are used.
const (
	// ConditionAllowedRedirectURIsValid reports whether every redirect URI is https, or http on a
	// loopback address, without a fragment.
	ConditionAllowedRedirectURIsValid = "AllowedRedirectURIsValid"
	// ReasonInvalidRedirectURI means a redirect URI is neither https nor loopback http.
	ReasonInvalidRedirectURI = "InvalidRedirectURI"
)

// Result is what Validate found.
type Result struct {
	// Conditions are ClientSecretExists, AllowedGrantTypesValid, AllowedScopesValid and
	// AllowedRedirectURIsValid, each with the client's generation and no transition time (the
	// caller merges them into the status, which sets it).
	Conditions []metav1.Condition
	// Phase is Ready when every condition is true, and Error otherwise.
	Phase configv1alpha1.Phase
	// Hashes are the client's bcrypt secret hashes when the client is Ready, and nil otherwise:
	// an invalid client may not authenticate.
	Hashes []string
	// TotalClientSecrets counts the stored hashes, valid or not, for status.totalClientSecrets.
	TotalClientSecrets int32
}

// Validate checks client and its storage Secret (nil when there is none). Stored hashes whose
// bcrypt cost is below minCost are invalid.
func Validate(client *configv1alpha1.OIDCClient, storage *corev1.Secret, minCost int) Result {
	secretsCond, hashes := checkSecrets(storage, minCost)
	r := Result{
		Conditions: []metav1.Condition{
			secretsCond,
			checkGrantTypes(client.Spec),
			checkScopes(client.Spec),
			checkRedirectURIs(client.Spec.AllowedRedirectURIs),
		},
		Phase:              configv1alpha1.PhaseReady,
		TotalClientSecrets: int32(len(hashes)), //nolint:gosec // a handful of hashes
	}
	for i := range r.Conditions {
		r.Conditions[i].ObservedGeneration = client.Generation
		if r.Conditions[i].Status != metav1.ConditionTrue {
			r.Phase = configv1alpha1.PhaseError
		}
	}
	if r.Phase == configv1alpha1.PhaseReady {
		r.Hashes = hashes
	}
	return r
}

func checkSecrets(storage *corev1.Secret, minCost int) (metav1.Condition, []string) {
	c := metav1.Condition{Type: configv1alpha1.ConditionClientSecretExists, Status: metav1.ConditionFalse, Reason: configv1alpha1.ReasonNoClientSecretFound}
	if storage == nil {
		c.Message = "no client secret found: create an OIDCClientSecretRequest to generate one"
		return c, nil
	}
	hashes, err := clientsecrets.Hashes(storage)
	if err != nil {
		c.Message = fmt.Sprintf("no client secret found: %v", err)
		return c, nil
	}
	if len(hashes) == 0 {
		c.Message = "no client secret found: the storage Secret holds none"
		return c, nil
	}
	var problems []string
	for i, h := range hashes {
		cost, err := bcrypt.Cost([]byte(h))
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("hash %d: %v", i, err))
		case cost < minCost:
			problems = append(problems, fmt.Sprintf("hash %d: bcrypt cost %d is below the minimum of %d", i, cost, minCost))
		}
	}
	if len(problems) > 0 {
		c.Reason = configv1alpha1.ReasonInvalidClientSecretFound
		c.Message = fmt.Sprintf("%d client secrets stored, none used because some are invalid: %s", len(hashes), strings.Join(problems, "; "))
		return c, hashes
	}
	c.Status, c.Reason = metav1.ConditionTrue, configv1alpha1.ReasonSuccess
	c.Message = fmt.Sprintf("%d client secret(s) stored", len(hashes))
	return c, hashes
}

// requirement says that want must be in the list named wantIn when cond holds.
type requirement struct {
	cond    bool
	want    string
	wantIn  string
	because string // why want is needed; empty when it always is
}

func checkGrantTypes(spec configv1alpha1.OIDCClientSpec) metav1.Condition {
	grant := func(g configv1alpha1.GrantType) bool { return slices.Contains(spec.AllowedGrantTypes, g) }
	scope := func(s configv1alpha1.Scope) bool { return slices.Contains(spec.AllowedScopes, s) }
	return condition(configv1alpha1.ConditionAllowedGrantTypesValid, "allowedGrantTypes", []requirement{
		{cond: !grant(configv1alpha1.GrantTypeAuthorizationCode), want: string(configv1alpha1.GrantTypeAuthorizationCode), wantIn: "allowedGrantTypes"},
		{cond: scope(configv1alpha1.ScopeOfflineAccess) && !grant(configv1alpha1.GrantTypeRefreshToken),
			want: string(configv1alpha1.GrantTypeRefreshToken), wantIn: "allowedGrantTypes", because: `allowedScopes has "offline_access"`},
		{cond: scope(configv1alpha1.ScopeRequestAudience) && !grant(configv1alpha1.GrantTypeTokenExchange),
			want: string(configv1alpha1.GrantTypeTokenExchange), wantIn: "allowedGrantTypes", because: `allowedScopes has "pinniped:request-audience"`},
	})
}

func checkScopes(spec configv1alpha1.OIDCClientSpec) metav1.Condition {
	grant := func(g configv1alpha1.GrantType) bool { return slices.Contains(spec.AllowedGrantTypes, g) }
	scope := func(s configv1alpha1.Scope) bool { return slices.Contains(spec.AllowedScopes, s) }
	requestAudience := scope(configv1alpha1.ScopeRequestAudience)
	return condition(configv1alpha1.ConditionAllowedScopesValid, "allowedScopes", []requirement{
		{cond: !scope(configv1alpha1.ScopeOpenID), want: string(configv1alpha1.ScopeOpenID), wantIn: "allowedScopes"},
		{cond: grant(configv1alpha1.GrantTypeRefreshToken) && !scope(configv1alpha1.ScopeOfflineAccess),
			want: string(configv1alpha1.ScopeOfflineAccess), wantIn: "allowedScopes", because: `allowedGrantTypes has "refresh_token"`},
		{cond: requestAudience && !scope(configv1alpha1.ScopeUsername),
			want: string(configv1alpha1.ScopeUsername), wantIn: "allowedScopes", because: `allowedScopes has "pinniped:request-audience"`},
		{cond: requestAudience && !scope(configv1alpha1.ScopeGroups),
			want: string(configv1alpha1.ScopeGroups), wantIn: "allowedScopes", because: `allowedScopes has "pinniped:request-audience"`},
		{cond: grant(configv1alpha1.GrantTypeTokenExchange) && !requestAudience,
			want: string(configv1alpha1.ScopeRequestAudience), wantIn: "allowedScopes", because: `allowedGrantTypes has "` + string(configv1alpha1.GrantTypeTokenExchange) + `"`},
	})
}

// condition is true when no requirement is violated, and otherwise lists every violated one.
func condition(condType, field string, reqs []requirement) metav1.Condition {
	var missing []string
	for _, r := range reqs {
		if !r.cond {
			continue
		}
		if r.because == "" {
			missing = append(missing, fmt.Sprintf("%s must include %q", r.wantIn, r.want))
		} else {
			missing = append(missing, fmt.Sprintf("%s must include %q because %s", r.wantIn, r.want, r.because))
		}
	}
	if len(missing) > 0 {
		return metav1.Condition{Type: condType, Status: metav1.ConditionFalse, Reason: configv1alpha1.ReasonMissingRequiredValue, Message: strings.Join(missing, "; ")}
	}
	return metav1.Condition{Type: condType, Status: metav1.ConditionTrue, Reason: configv1alpha1.ReasonSuccess, Message: field + " is valid"}
}

func checkRedirectURIs(uris []configv1alpha1.RedirectURI) metav1.Condition {
	var problems []string
	for _, u := range uris {
		if err := checkRedirectURI(string(u)); err != nil {
			problems = append(problems, fmt.Sprintf("%q: %v", u, err))
		}
	}
	if len(uris) == 0 {
		problems = append(problems, "at least one is required")
	}
	if len(problems) > 0 {
		return metav1.Condition{Type: ConditionAllowedRedirectURIsValid, Status: metav1.ConditionFalse, Reason: ReasonInvalidRedirectURI,
			Message: "allowedRedirectURIs: " + strings.Join(problems, "; ")}
	}
	return metav1.Condition{Type: ConditionAllowedRedirectURIsValid, Status: metav1.ConditionTrue, Reason: configv1alpha1.ReasonSuccess, Message: "allowedRedirectURIs is valid"}
}

// checkRedirectURI accepts https URLs with a host, and http URLs on 127.0.0.1 or [::1] (any port),
// without a fragment (RFC 6749 section 3.1.2).
func checkRedirectURI(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return errors.New("must not have a fragment")
	}
	switch u.Scheme {
	case "https":
		if u.Hostname() == "" {
			return errors.New("has no host")
		}
		return nil
	case "http":
		if h := u.Hostname(); h != "127.0.0.1" && h != "::1" {
			return errors.New("http is only allowed on 127.0.0.1 or [::1]")
		}
		return nil
	}
	return errors.New("must be https, or http on a loopback address")
}
