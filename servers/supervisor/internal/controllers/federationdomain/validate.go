package federationdomain

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	"sealion.dev/servers/supervisor/internal/idtransform"
	"sealion.dev/servers/supervisor/internal/issuer"
)

// conditionTypes are every condition a FederationDomain reports, in the order they are checked,
// Ready last.
var conditionTypes = []string{
	configv1alpha1.ConditionIssuerIsUnique,
	configv1alpha1.ConditionOneTLSSecretPerIssuerHostname,
	configv1alpha1.ConditionIssuerURLValid,
	configv1alpha1.ConditionIdentityProvidersFound,
	configv1alpha1.ConditionIdentityProvidersDisplayNamesUnique,
	configv1alpha1.ConditionIdentityProvidersObjectRefAPIGroupSuffixValid,
	configv1alpha1.ConditionIdentityProvidersObjectRefKindValid,
	configv1alpha1.ConditionTransformsExpressionsValid,
	configv1alpha1.ConditionTransformsExamplesPassed,
	configv1alpha1.ConditionReady,
}

// result is the outcome of validating one FederationDomain.
type result struct {
	fd         *configv1alpha1.FederationDomain
	conditions conditions
	// issuerURL is the parsed spec.issuer; nil when it is invalid.
	issuerURL *url.URL
	// servable: the issuer URL is valid and unique and its hostname has one TLS Secret, so its
	// endpoints can be served even if some identity providers are unusable.
	servable bool
	// tlsAgreed: the FederationDomains of this hostname agree on the TLS Secret.
	tlsAgreed bool
	// idps are the usable identity providers, sorted by display name.
	idps []issuer.IdentityProvider
}

// validator checks FederationDomains against each other and the identity providers.
type validator struct {
	// idpGroup is the API group objectRefs must name, as our clients see it (the default group:
	// the group suffix transport maps the configured one back to it).
	idpGroup string
	// idpGroupShown is the same group as users write it, with the configured suffix, for messages.
	idpGroupShown string
	// kinds are the names of the kinds objectRefs may name, sorted (see kindNames).
	kinds     []string
	inventory inventory
}

// validate checks every FederationDomain of a namespace.
func (v validator) validate(ctx context.Context, fds []*configv1alpha1.FederationDomain) []*result {
	results := make([]*result, 0, len(fds))
	for _, fd := range fds {
		r := &result{fd: fd}
		r.issuerURL = r.checkIssuerURL()
		results = append(results, r)
	}
	checkUniqueIssuers(results)
	checkTLSSecretsPerHostname(results)
	for _, r := range results {
		r.servable = r.issuerURL != nil && r.conditions.ok(configv1alpha1.ConditionIssuerIsUnique) && r.tlsAgreed
		v.checkIdentityProviders(ctx, r)
		r.conditions.setReady()
		slices.SortStableFunc(r.conditions, func(a, b metav1.Condition) int {
			return slices.Index(conditionTypes, a.Type) - slices.Index(conditionTypes, b.Type)
		})
	}
	return results
}

func (r *result) checkIssuerURL() *url.URL {
	u, problem := parseIssuer(r.fd.Spec.Issuer)
	if problem != "" {
		r.conditions.fail(configv1alpha1.ConditionIssuerURLValid, configv1alpha1.ReasonInvalidIssuerURL, problem)
		return nil
	}
	r.conditions.pass(configv1alpha1.ConditionIssuerURLValid, "spec.issuer is a valid URL")
	return u
}

// parseIssuer parses an issuer URL, or explains why it cannot be one.
func parseIssuer(raw string) (*url.URL, string) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, fmt.Sprintf("spec.issuer %q is not a URL: %v", raw, err)
	case u.Scheme != "https":
		return nil, fmt.Sprintf("spec.issuer %q must use the https scheme", raw)
	case u.Hostname() == "":
		return nil, fmt.Sprintf("spec.issuer %q has no hostname", raw)
	case u.User != nil:
		return nil, fmt.Sprintf("spec.issuer %q must not have a username or password", raw)
	case u.RawQuery != "" || u.ForceQuery:
		return nil, fmt.Sprintf("spec.issuer %q must not have query parameters", raw)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, fmt.Sprintf("spec.issuer %q must not have a fragment", raw)
	case u.Path != "" && u.Path != "/" && path.Clean(u.Path) != strings.TrimSuffix(u.Path, "/"):
		return nil, fmt.Sprintf("spec.issuer %q has a path with empty, '.' or '..' segments", raw)
	case strings.Contains(u.Path, "/.well-known/"):
		return nil, fmt.Sprintf("spec.issuer %q must not contain /.well-known/: discovery is served below the issuer", raw)
	}
	if _, port, err := net.SplitHostPort(u.Host); err == nil && port == "" {
		return nil, fmt.Sprintf("spec.issuer %q has an empty port", raw)
	}
	return u, ""
}

// issuerKey identifies where an issuer is served: issuers differing only in the case of the host,
// the default port or a trailing slash collide.
func issuerKey(u *url.URL) string {
	host := strings.TrimSuffix(strings.ToLower(u.Host), ":443")
	return host + strings.TrimSuffix(u.Path, "/")
}

func checkUniqueIssuers(results []*result) {
	count := map[string]int{}
	for _, r := range results {
		if r.issuerURL != nil {
			count[issuerKey(r.issuerURL)]++
		}
	}
	for _, r := range results {
		switch {
		case r.issuerURL == nil:
			r.conditions.skip(configv1alpha1.ConditionIssuerIsUnique)
		case count[issuerKey(r.issuerURL)] > 1:
			r.conditions.fail(configv1alpha1.ConditionIssuerIsUnique, configv1alpha1.ReasonDuplicateIssuer,
				fmt.Sprintf("several FederationDomains have the issuer %q (or one differing only by case, default port or trailing slash); none of them is served", r.fd.Spec.Issuer))
		default:
			r.conditions.pass(configv1alpha1.ConditionIssuerIsUnique, "spec.issuer is unique among all FederationDomains")
		}
	}
}

func tlsSecretName(fd *configv1alpha1.FederationDomain) string {
	if fd.Spec.TLS == nil {
		return ""
	}
	return fd.Spec.TLS.SecretName
}

// checkTLSSecretsPerHostname: the certificate is chosen by hostname alone, so every
// FederationDomain of a hostname must name the same Secret (or all none).
func checkTLSSecretsPerHostname(results []*result) {
	secrets := map[string]map[string]bool{}
	for _, r := range results {
		if r.issuerURL == nil {
			continue
		}
		host := strings.ToLower(r.issuerURL.Hostname())
		if secrets[host] == nil {
			secrets[host] = map[string]bool{}
		}
		secrets[host][tlsSecretName(r.fd)] = true
	}
	for _, r := range results {
		if r.issuerURL == nil {
			r.conditions.skip(configv1alpha1.ConditionOneTLSSecretPerIssuerHostname)
			continue
		}
		host := strings.ToLower(r.issuerURL.Hostname())
		if len(secrets[host]) > 1 {
			r.conditions.fail(configv1alpha1.ConditionOneTLSSecretPerIssuerHostname, configv1alpha1.ReasonDifferentSecretRefsFound,
				fmt.Sprintf("the FederationDomains with issuer hostname %q name different TLS Secrets in spec.tls.secretName (%s); they must all name the same one", host, quotedKeys(secrets[host])))
			continue
		}
		r.tlsAgreed = true
		r.conditions.pass(configv1alpha1.ConditionOneTLSSecretPerIssuerHostname, "every FederationDomain with this issuer hostname names the same TLS Secret")
	}
}

func quotedKeys(m map[string]bool) string {
	var keys []string
	for k := range m {
		keys = append(keys, fmt.Sprintf("%q", k))
	}
	slices.Sort(keys)
	return strings.Join(keys, ", ")
}

// checkIdentityProviders resolves the identity providers and their transforms.
func (v validator) checkIdentityProviders(ctx context.Context, r *result) {
	if len(r.fd.Spec.IdentityProviders) == 0 {
		v.checkLegacyIdentityProvider(r)
		return
	}
	var notFound, badGroup, badKind []string
	names := map[string]int{}
	for _, entry := range r.fd.Spec.IdentityProviders {
		names[entry.DisplayName]++
	}
	var duplicates []string
	for name, n := range names {
		if n > 1 {
			duplicates = append(duplicates, fmt.Sprintf("%q", name))
		}
	}
	slices.Sort(duplicates)

	var invalidExpressions, failedExamples []error
	for i, entry := range r.fd.Spec.IdentityProviders {
		field := fmt.Sprintf("spec.identityProviders[%d]", i)
		ref := entry.ObjectRef
		group := ""
		if ref.APIGroup != nil {
			group = *ref.APIGroup
		}
		groupOK, kindOK := group == v.idpGroup, slices.Contains(v.kinds, ref.Kind)
		if !groupOK {
			badGroup = append(badGroup, fmt.Sprintf("%s.objectRef.apiGroup %q", field, group))
		}
		if !kindOK {
			badKind = append(badKind, fmt.Sprintf("%s.objectRef.kind %q", field, ref.Kind))
		}
		obj, found := v.inventory.get(ref.Kind, ref.Name)
		found = found && groupOK && kindOK
		if !found {
			notFound = append(notFound, fmt.Sprintf("%s.objectRef (%s %q)", field, ref.Kind, ref.Name))
		}

		pipeline, err := idtransform.Compile(entry.Transforms)
		if err != nil {
			invalidExpressions = append(invalidExpressions, prefixed(field+".transforms.", err))
			continue
		}
		if err := pipeline.CheckExamples(ctx, entry.Transforms.Examples); err != nil {
			failedExamples = append(failedExamples, prefixed(field+".transforms.", err))
			continue
		}
		if found && names[entry.DisplayName] == 1 {
			r.idps = append(r.idps, issuer.IdentityProvider{
				DisplayName: entry.DisplayName, Type: obj.typ, Flows: obj.flows,
				Kind: obj.kind, Name: obj.name, UID: obj.uid, Transforms: pipeline,
			})
		}
	}
	slices.SortFunc(r.idps, func(a, b issuer.IdentityProvider) int { return strings.Compare(a.DisplayName, b.DisplayName) })

	c := &r.conditions
	if len(notFound) > 0 {
		c.fail(configv1alpha1.ConditionIdentityProvidersFound, configv1alpha1.ReasonIdentityProvidersObjectRefsNotFound,
			"cannot find the identity providers of "+strings.Join(notFound, ", "))
	} else {
		c.pass(configv1alpha1.ConditionIdentityProvidersFound, "every identity provider in spec.identityProviders was found")
	}
	if len(duplicates) > 0 {
		c.fail(configv1alpha1.ConditionIdentityProvidersDisplayNamesUnique, configv1alpha1.ReasonDuplicateDisplayNames,
			"spec.identityProviders[].displayName must be unique; repeated: "+strings.Join(duplicates, ", "))
	} else {
		c.pass(configv1alpha1.ConditionIdentityProvidersDisplayNamesUnique, "every spec.identityProviders[].displayName is unique")
	}
	if len(badGroup) > 0 {
		c.fail(configv1alpha1.ConditionIdentityProvidersObjectRefAPIGroupSuffixValid, configv1alpha1.ReasonAPIGroupUnrecognized,
			fmt.Sprintf("the API group of every objectRef must be %q; not %s", v.idpGroupShown, strings.Join(badGroup, ", ")))
	} else {
		c.pass(configv1alpha1.ConditionIdentityProvidersObjectRefAPIGroupSuffixValid, fmt.Sprintf("every objectRef names the API group %q", v.idpGroupShown))
	}
	if len(badKind) > 0 {
		c.fail(configv1alpha1.ConditionIdentityProvidersObjectRefKindValid, configv1alpha1.ReasonKindUnrecognized,
			fmt.Sprintf("the kind of every objectRef must be one of %s; not %s", strings.Join(v.kinds, ", "), strings.Join(badKind, ", ")))
	} else {
		c.pass(configv1alpha1.ConditionIdentityProvidersObjectRefKindValid, "every objectRef names a supported kind")
	}
	if len(invalidExpressions) > 0 {
		c.fail(configv1alpha1.ConditionTransformsExpressionsValid, configv1alpha1.ReasonInvalidTransformsExpressions, errors.Join(invalidExpressions...).Error())
	} else {
		c.pass(configv1alpha1.ConditionTransformsExpressionsValid, "every transform expression compiles")
	}
	switch {
	case len(failedExamples) > 0:
		c.fail(configv1alpha1.ConditionTransformsExamplesPassed, configv1alpha1.ReasonTransformsExamplesFailed,
			errors.Join(failedExamples...).Error()+"\nthe identity providers whose examples fail are not offered")
	case len(invalidExpressions) > 0:
		c.skip(configv1alpha1.ConditionTransformsExamplesPassed)
	default:
		c.pass(configv1alpha1.ConditionTransformsExamplesPassed, "every transform example gives the expected result")
	}
}

// checkLegacyIdentityProvider: without spec.identityProviders, the namespace's only identity
// provider is used, under its own name.
func (v validator) checkLegacyIdentityProvider(r *result) {
	c := &r.conditions
	all := v.inventory.all()
	switch len(all) {
	case 0:
		c.fail(configv1alpha1.ConditionIdentityProvidersFound, configv1alpha1.ReasonLegacyConfigurationIdentityProviderNotFound,
			"spec.identityProviders is empty and the namespace has no identity provider: create one, or list identity providers in spec.identityProviders")
	case 1:
		o := all[0]
		c.passWithReason(configv1alpha1.ConditionIdentityProvidersFound, configv1alpha1.ReasonLegacyConfigurationSuccess,
			fmt.Sprintf("spec.identityProviders is empty, so the namespace's only identity provider, %s %q, is used", o.kind, o.name))
		r.idps = []issuer.IdentityProvider{{DisplayName: o.name, Type: o.typ, Flows: o.flows, Kind: o.kind, Name: o.name, UID: o.uid}}
	default:
		c.fail(configv1alpha1.ConditionIdentityProvidersFound, configv1alpha1.ReasonIdentityProviderNotSpecified,
			fmt.Sprintf("spec.identityProviders is empty but the namespace has %d identity providers: list the ones to use in spec.identityProviders", len(all)))
	}
	const nothing = "spec.identityProviders is empty"
	c.pass(configv1alpha1.ConditionIdentityProvidersDisplayNamesUnique, nothing)
	c.pass(configv1alpha1.ConditionIdentityProvidersObjectRefAPIGroupSuffixValid, nothing)
	c.pass(configv1alpha1.ConditionIdentityProvidersObjectRefKindValid, nothing)
	c.pass(configv1alpha1.ConditionTransformsExpressionsValid, nothing)
	c.pass(configv1alpha1.ConditionTransformsExamplesPassed, nothing)
}

// prefixed prefixes every error joined in err with prefix, one per line.
func prefixed(prefix string, err error) error {
	var list []error
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		list = joined.Unwrap()
	} else {
		list = []error{err}
	}
	out := make([]error, 0, len(list))
	for _, e := range list {
		out = append(out, fmt.Errorf("%s%w", prefix, e))
	}
	return errors.Join(out...)
}

// conditions collects a FederationDomain's conditions in the order they are set.
type conditions []metav1.Condition

func (c *conditions) pass(typ, message string) {
	c.passWithReason(typ, configv1alpha1.ReasonSuccess, message)
}

func (c *conditions) passWithReason(typ, reason, message string) {
	*c = append(*c, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: reason, Message: message})
}

func (c *conditions) fail(typ, reason, message string) {
	*c = append(*c, metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: message})
}

// skip records a condition that could not be checked because an earlier one failed.
func (c *conditions) skip(typ string) {
	*c = append(*c, metav1.Condition{Type: typ, Status: metav1.ConditionUnknown, Reason: configv1alpha1.ReasonUnableToValidate,
		Message: "unable to check; see the other conditions"})
}

func (c conditions) ok(typ string) bool {
	for _, cond := range c {
		if cond.Type == typ {
			return cond.Status == metav1.ConditionTrue
		}
	}
	return false
}

// setReady adds Ready: true when every other condition is.
func (c *conditions) setReady() {
	for _, cond := range *c {
		if cond.Status != metav1.ConditionTrue {
			c.fail(configv1alpha1.ConditionReady, configv1alpha1.ReasonNotReady, "the FederationDomain is not ready: see the other conditions")
			return
		}
	}
	c.pass(configv1alpha1.ConditionReady, "the FederationDomain is ready")
}

// phase summarizes the conditions.
func (c conditions) phase() configv1alpha1.Phase {
	if c.ok(configv1alpha1.ConditionReady) {
		return configv1alpha1.PhaseReady
	}
	return configv1alpha1.PhaseError
}
