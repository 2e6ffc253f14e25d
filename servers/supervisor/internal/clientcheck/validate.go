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
	"sealion.dev/servers/supervisor/internal/sessionpolicy"
)

// The checks of spec.allowedRedirectURIs and spec.allowedPostLogoutRedirectURIs are ours: Pinniped
// relies on the CRD's pattern alone, which admits what is not a URL (a bad %-escape) or has a
// fragment. They catch such clients, and those stored while the CRD's validation was different,
// before they are used. Their conditions appear only when they fail, so that the status of every
// valid client is upstream's.
const (
	// ConditionAllowedRedirectURIsValid reports that a redirect URI is neither https nor http on
	// a loopback address, or has a fragment.
	ConditionAllowedRedirectURIsValid = "AllowedRedirectURIsValid"
	// ConditionAllowedPostLogoutRedirectURIsValid reports the same of a post-logout redirect URI
	// (the end-session endpoint's): where the browser is sent back obeys the same rules.
	ConditionAllowedPostLogoutRedirectURIsValid = "AllowedPostLogoutRedirectURIsValid"
	// ReasonInvalidRedirectURI means a redirect URI is neither https nor loopback http.
	ReasonInvalidRedirectURI = "InvalidRedirectURI"
)

// Result is what Validate found.
type Result struct {
	// Conditions are AllowedGrantTypesValid, AllowedScopesValid and ClientSecretExists (and
	// AllowedRedirectURIsValid and AllowedPostLogoutRedirectURIsValid when false,
	// SessionLifetimesValid with spec.sessionLifetimes),
	// sorted by type, each with the client's generation and
	// no transition time (the caller merges them into the status, which sets it). Their texts are
	// upstream Pinniped's.
	Conditions []metav1.Condition
	// Phase is Ready when every condition is true, and Error otherwise.
	Phase configv1alpha1.Phase
	// Hashes are the client's bcrypt secret hashes when the client is Ready, and nil otherwise:
	// an invalid client may not authenticate.
	Hashes []string
	// TotalClientSecrets counts the stored hashes when all are valid, and is 0 otherwise, for
	// status.totalClientSecrets.
	TotalClientSecrets int32
}

// Validate checks client and its storage Secret (nil when there is none). Stored hashes whose
// bcrypt cost is below minCost are invalid.
func Validate(client *configv1alpha1.OIDCClient, storage *corev1.Secret, minCost int) Result {
	secretsCond, hashes := checkSecrets(storage, minCost)
	conditions := []metav1.Condition{checkGrantTypes(client.Spec), checkScopes(client.Spec), secretsCond}
	if c, ok := checkRedirectURIs(ConditionAllowedRedirectURIsValid, "allowedRedirectURIs", client.Spec.AllowedRedirectURIs, true); !ok {
		conditions = append(conditions, c)
	}
	if c, ok := checkRedirectURIs(ConditionAllowedPostLogoutRedirectURIsValid, "allowedPostLogoutRedirectURIs", client.Spec.AllowedPostLogoutRedirectURIs, false); !ok {
		conditions = append(conditions, c)
	}
	if client.Spec.SessionLifetimes != nil {
		conditions = append(conditions, checkSessionLifetimes(client.Spec.SessionLifetimes))
	}
	slices.SortStableFunc(conditions, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
	r := Result{
		Conditions:         conditions,
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

// checkSessionLifetimes is SessionLifetimesValid, ours: the CRD refuses out-of-range values, and
// this covers clients stored under an older CRD.
func checkSessionLifetimes(spec *configv1alpha1.SessionLifetimes) metav1.Condition {
	if _, err := sessionpolicy.FromSpec(spec); err != nil {
		return metav1.Condition{Type: configv1alpha1.ConditionSessionLifetimesValid, Status: metav1.ConditionFalse,
			Reason: configv1alpha1.ReasonInvalidSessionLifetimes, Message: err.Error()}
	}
	return metav1.Condition{Type: configv1alpha1.ConditionSessionLifetimesValid, Status: metav1.ConditionTrue,
		Reason: configv1alpha1.ReasonSuccess, Message: `"spec.sessionLifetimes" is valid; each value shortens the FederationDomain's where it is shorter`}
}

// checkSecrets returns the ClientSecretExists condition, and the hashes when all are valid.
func checkSecrets(storage *corev1.Secret, minCost int) (metav1.Condition, []string) {
	c := metav1.Condition{Type: configv1alpha1.ConditionClientSecretExists, Status: metav1.ConditionFalse, Reason: configv1alpha1.ReasonNoClientSecretFound}
	if storage == nil {
		c.Message = "no client secret found (no Secret storage found)"
		return c, nil
	}
	hashes, err := clientsecrets.Hashes(storage)
	if err != nil {
		c.Message = fmt.Sprintf("error reading client secret storage: %v", err)
		return c, nil
	}
	if len(hashes) == 0 {
		c.Message = "no client secret found (empty list in storage)"
		return c, nil
	}
	var problems []string
	for i, h := range hashes {
		cost, err := bcrypt.Cost([]byte(h))
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("hashed client secret at index %d: %v", i, err))
		case cost < minCost:
			problems = append(problems, fmt.Sprintf("hashed client secret at index %d: bcrypt cost %d is below the required minimum of %d", i, cost, minCost))
		}
	}
	if len(problems) > 0 {
		c.Reason = configv1alpha1.ReasonInvalidClientSecretFound
		c.Message = fmt.Sprintf("%d stored client secrets found, but some were invalid, so none will be used: %s", len(hashes), strings.Join(problems, "; "))
		return c, nil
	}
	c.Status, c.Reason = metav1.ConditionTrue, configv1alpha1.ReasonSuccess
	c.Message = fmt.Sprintf("%d client secret(s) found", len(hashes))
	return c, hashes
}

// requirement is a value a list must hold, always or when another list holds a value.
type requirement struct {
	cond bool
	// message says what is missing, in upstream's words.
	message string
}

// always is upstream's message for a value list must always hold.
func always(value, list string) string {
	return fmt.Sprintf("%q must always be included in %q", value, list)
}

// when is upstream's message for a value list must hold because otherList holds otherValue.
func when(value, list, otherValue, otherList string) string {
	return fmt.Sprintf("%q must be included in %q when %q is included in %q", value, list, otherValue, otherList)
}

const (
	grantTypesField = "allowedGrantTypes"
	scopesField     = "allowedScopes"
)

func checkGrantTypes(spec configv1alpha1.OIDCClientSpec) metav1.Condition {
	grant := func(g configv1alpha1.GrantType) bool { return slices.Contains(spec.AllowedGrantTypes, g) }
	scope := func(s configv1alpha1.Scope) bool { return slices.Contains(spec.AllowedScopes, s) }
	return condition(configv1alpha1.ConditionAllowedGrantTypesValid, grantTypesField, []requirement{
		{!grant(configv1alpha1.GrantTypeAuthorizationCode), always(string(configv1alpha1.GrantTypeAuthorizationCode), grantTypesField)},
		{scope(configv1alpha1.ScopeOfflineAccess) && !grant(configv1alpha1.GrantTypeRefreshToken),
			when(string(configv1alpha1.GrantTypeRefreshToken), grantTypesField, string(configv1alpha1.ScopeOfflineAccess), scopesField)},
		{scope(configv1alpha1.ScopeRequestAudience) && !grant(configv1alpha1.GrantTypeTokenExchange),
			when(string(configv1alpha1.GrantTypeTokenExchange), grantTypesField, string(configv1alpha1.ScopeRequestAudience), scopesField)},
	})
}

func checkScopes(spec configv1alpha1.OIDCClientSpec) metav1.Condition {
	grant := func(g configv1alpha1.GrantType) bool { return slices.Contains(spec.AllowedGrantTypes, g) }
	scope := func(s configv1alpha1.Scope) bool { return slices.Contains(spec.AllowedScopes, s) }
	requestAudience := scope(configv1alpha1.ScopeRequestAudience)
	return condition(configv1alpha1.ConditionAllowedScopesValid, scopesField, []requirement{
		{!scope(configv1alpha1.ScopeOpenID), always(string(configv1alpha1.ScopeOpenID), scopesField)},
		{grant(configv1alpha1.GrantTypeRefreshToken) && !scope(configv1alpha1.ScopeOfflineAccess),
			when(string(configv1alpha1.ScopeOfflineAccess), scopesField, string(configv1alpha1.GrantTypeRefreshToken), grantTypesField)},
		{requestAudience && (!scope(configv1alpha1.ScopeUsername) || !scope(configv1alpha1.ScopeGroups)),
			fmt.Sprintf("%q and %q must be included in %q when %q is included in %q", configv1alpha1.ScopeUsername, configv1alpha1.ScopeGroups,
				scopesField, configv1alpha1.ScopeRequestAudience, scopesField)},
		{grant(configv1alpha1.GrantTypeTokenExchange) && !requestAudience,
			when(string(configv1alpha1.ScopeRequestAudience), scopesField, string(configv1alpha1.GrantTypeTokenExchange), grantTypesField)},
	})
}

// condition is true when no requirement is violated, and otherwise lists every violated one.
func condition(condType, field string, reqs []requirement) metav1.Condition {
	var missing []string
	for _, r := range reqs {
		if r.cond {
			missing = append(missing, r.message)
		}
	}
	if len(missing) > 0 {
		return metav1.Condition{Type: condType, Status: metav1.ConditionFalse, Reason: configv1alpha1.ReasonMissingRequiredValue, Message: strings.Join(missing, "; ")}
	}
	return metav1.Condition{Type: condType, Status: metav1.ConditionTrue, Reason: configv1alpha1.ReasonSuccess, Message: fmt.Sprintf("%q is valid", field)}
}

// checkRedirectURIs reports whether every redirect URI of the spec's field is acceptable (and,
// when required, that there is one), and when not, the false condType condition saying why.
func checkRedirectURIs(condType, field string, uris []configv1alpha1.RedirectURI, required bool) (metav1.Condition, bool) {
	var problems []string
	for _, u := range uris {
		if err := checkRedirectURI(string(u)); err != nil {
			problems = append(problems, fmt.Sprintf("%q: %v", u, err))
		}
	}
	if required && len(uris) == 0 {
		problems = append(problems, "at least one is required")
	}
	if len(problems) > 0 {
		return metav1.Condition{Type: condType, Status: metav1.ConditionFalse, Reason: ReasonInvalidRedirectURI,
			Message: field + ": " + strings.Join(problems, "; ")}, false
	}
	return metav1.Condition{}, true
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
