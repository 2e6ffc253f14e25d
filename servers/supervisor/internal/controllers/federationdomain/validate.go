package federationdomain

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	"sealion.dev/servers/supervisor/internal/idtransform"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/sessionpolicy"
)

// result is the outcome of validating one FederationDomain.
type result struct {
	fd         *configv1alpha1.FederationDomain
	conditions conditions
	// parsed is spec.issuer as url.Parse reads it, nil when it cannot; the checks across
	// FederationDomains use it even when it is not a valid issuer.
	parsed *url.URL
	// issuerURL is the parsed spec.issuer; nil when it is invalid.
	issuerURL *url.URL
	// servable: every condition is true, so its endpoints are served. As Pinniped, a
	// FederationDomain with any problem (an identity provider not found, a failing transform
	// example) is not served at all, rather than served with part of its identity providers.
	servable bool
	// tlsAgreed: the FederationDomains of this hostname agree on the TLS Secret.
	tlsAgreed bool
	// idps are the usable identity providers, sorted by display name.
	idps []issuer.IdentityProvider
	// sessions is spec.sessionLifetimes, when valid.
	sessions sessionpolicy.Policy
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

// validate checks every FederationDomain of a namespace. The conditions and their texts are
// upstream Pinniped's, sorted by type as it stores them.
func (v validator) validate(ctx context.Context, fds []*configv1alpha1.FederationDomain) []*result {
	results := make([]*result, 0, len(fds))
	for _, fd := range fds {
		r := &result{fd: fd}
		r.parsed, _ = url.Parse(fd.Spec.Issuer)
		r.checkIssuerURL()
		results = append(results, r)
	}
	checkUniqueIssuers(results)
	checkTLSSecretsPerHostname(results)
	for _, r := range results {
		v.checkIdentityProviders(ctx, r)
		r.checkSessionLifetimes()
		r.conditions.setReady(r.fd.Spec.Issuer)
		r.servable = r.issuerURL != nil && r.tlsAgreed && r.conditions.ok(configv1alpha1.ConditionReady)
		sortConditions(r.conditions)
	}
	return results
}

// checkSessionLifetimes reports the session policy. The CRD refuses out-of-range values; this
// condition covers objects its schema did not check (stored under an older CRD). It is reported
// only when spec.sessionLifetimes is set, so that the conditions of a FederationDomain written for
// Pinniped are Pinniped's, which its tools compare whole.
func (r *result) checkSessionLifetimes() {
	if r.fd.Spec.SessionLifetimes == nil {
		r.sessions = sessionpolicy.Default
		return
	}
	p, err := sessionpolicy.FromSpec(r.fd.Spec.SessionLifetimes)
	if err != nil {
		r.conditions.fail(configv1alpha1.ConditionSessionLifetimesValid, configv1alpha1.ReasonInvalidSessionLifetimes, err.Error())
		return
	}
	r.sessions = p
	r.conditions.pass(configv1alpha1.ConditionSessionLifetimesValid, fmt.Sprintf("sessions last at most %s%s", p.Max, idleText(p)))
}

func idleText(p sessionpolicy.Policy) string {
	if p.Idle == 0 {
		return ", with no idle timeout"
	}
	return fmt.Sprintf(", or until idle for %s", p.Idle)
}

func (r *result) checkIssuerURL() {
	if err := validIssuer(r.fd.Spec.Issuer); err != nil {
		r.conditions.fail(configv1alpha1.ConditionIssuerURLValid, configv1alpha1.ReasonInvalidIssuerURL, err.Error())
		return
	}
	r.issuerURL = r.parsed
	r.conditions.pass(configv1alpha1.ConditionIssuerURLValid, "spec.issuer is a valid URL")
}

// validIssuer checks an issuer URL as upstream Pinniped does, the first problem found in its
// words.
func validIssuer(raw string) error {
	if raw == "" {
		return errors.New("federation domain must have an issuer")
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("could not parse issuer as URL: %w", err)
	case u.Scheme != "https":
		return errors.New(`issuer must have "https" scheme`)
	case u.Hostname() == "":
		return errors.New("issuer must have a hostname")
	case u.User != nil:
		return errors.New("issuer must not have username or password")
	case strings.HasSuffix(u.Path, "/"):
		return errors.New("issuer must not have trailing slash in path")
	case u.RawQuery != "":
		return errors.New("issuer must not have query")
	case u.Fragment != "":
		return errors.New("issuer must not have fragment")
	}
	return nil
}

// issuerKey identifies an issuer among FederationDomains: issuers differing only in the case of
// the host collide.
func issuerKey(u *url.URL) string {
	return u.Scheme + "://" + strings.ToLower(u.Host) + u.Path
}

// checkUniqueIssuers compares every issuer that parses as a URL, valid or not.
func checkUniqueIssuers(results []*result) {
	count := map[string]int{}
	for _, r := range results {
		if r.parsed != nil {
			count[issuerKey(r.parsed)]++
		}
	}
	for _, r := range results {
		switch {
		case r.parsed == nil:
			r.conditions.unknown(configv1alpha1.ConditionIssuerIsUnique,
				"unable to check if spec.issuer is unique among all FederationDomains because URL cannot be parsed")
		case count[issuerKey(r.parsed)] > 1:
			r.conditions.fail(configv1alpha1.ConditionIssuerIsUnique, configv1alpha1.ReasonDuplicateIssuer,
				"multiple FederationDomains have the same spec.issuer URL: these URLs must be unique (can use different hosts or paths)")
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

// checkTLSSecretsPerHostname: the certificate is chosen by hostname alone, so the
// FederationDomains of a hostname that name a TLS Secret must name the same one. Those naming
// none are served with it too.
func checkTLSSecretsPerHostname(results []*result) {
	secrets := map[string]map[string]bool{}
	for _, r := range results {
		if r.parsed == nil {
			continue
		}
		host := strings.ToLower(r.parsed.Hostname())
		if secrets[host] == nil {
			secrets[host] = map[string]bool{}
		}
		if r.fd.Spec.TLS != nil {
			secrets[host][r.fd.Spec.TLS.SecretName] = true
		}
	}
	for _, r := range results {
		if r.parsed == nil {
			r.conditions.unknown(configv1alpha1.ConditionOneTLSSecretPerIssuerHostname,
				"unable to check if all FederationDomains are using the same TLS secret when using the same hostname in the spec.issuer URL because URL cannot be parsed")
			continue
		}
		if len(secrets[strings.ToLower(r.parsed.Hostname())]) > 1 {
			r.conditions.fail(configv1alpha1.ConditionOneTLSSecretPerIssuerHostname, configv1alpha1.ReasonDifferentSecretRefsFound,
				"when different FederationDomains are using the same hostname in the spec.issuer URL then they must also use the same TLS secretRef: different secretRefs found")
			continue
		}
		r.tlsAgreed = true
		r.conditions.pass(configv1alpha1.ConditionOneTLSSecretPerIssuerHostname,
			"all FederationDomains are using the same TLS secret when using the same hostname in the spec.issuer URL")
	}
}

// checkIdentityProviders resolves the identity providers and their transforms.
func (v validator) checkIdentityProviders(ctx context.Context, r *result) {
	if len(r.fd.Spec.IdentityProviders) == 0 {
		v.checkLegacyIdentityProvider(r)
		return
	}
	names := map[string]int{}
	for _, entry := range r.fd.Spec.IdentityProviders {
		names[entry.DisplayName]++
	}
	var duplicates []string
	for name, n := range names {
		if n > 1 {
			duplicates = append(duplicates, name)
		}
	}

	var notFound, badGroups, badKinds, invalidExpressions, failedExamples []string
	for i, entry := range r.fd.Spec.IdentityProviders {
		ref := entry.ObjectRef
		group := ""
		if ref.APIGroup != nil {
			group = *ref.APIGroup
		}
		groupOK, kindOK := group == v.idpGroup, slices.Contains(v.kinds, ref.Kind)
		if !groupOK {
			badGroups = append(badGroups, group)
		}
		if !kindOK {
			badKinds = append(badKinds, ref.Kind)
		}
		obj, found := v.inventory.get(ref.Kind, ref.Name)
		found = found && groupOK && kindOK
		if !found {
			notFound = append(notFound, fmt.Sprintf("cannot find resource specified by .spec.identityProviders[%d].objectRef (with name %q)", i, ref.Name))
		}

		pipeline, err := idtransform.Compile(entry.Transforms)
		if err != nil {
			invalidExpressions = append(invalidExpressions, compileMessages(i, err))
			failedExamples = append(failedExamples, fmt.Sprintf(
				"unable to check if the examples specified by .spec.identityProviders[%d].transforms.examples[] had errors because an expression was invalid", i))
			continue
		}
		if failures := pipeline.CheckExamples(ctx, entry.Transforms.Examples); len(failures) > 0 {
			failedExamples = append(failedExamples, exampleMessages(i, failures))
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
		c.fail(configv1alpha1.ConditionIdentityProvidersFound, configv1alpha1.ReasonIdentityProvidersObjectRefsNotFound, strings.Join(notFound, "\n\n"))
	} else {
		c.pass(configv1alpha1.ConditionIdentityProvidersFound, "the resources specified by .spec.identityProviders[].objectRef were found")
	}
	v.checkListedIdentityProviders(c, duplicates, badGroups, badKinds, invalidExpressions, failedExamples)
}

// checkListedIdentityProviders adds the conditions about spec.identityProviders other than
// IdentityProvidersFound, given the problems found (none with no spec.identityProviders).
func (v validator) checkListedIdentityProviders(c *conditions, duplicates, badGroups, badKinds, invalidExpressions, failedExamples []string) {
	if len(duplicates) > 0 {
		c.fail(configv1alpha1.ConditionIdentityProvidersDisplayNamesUnique, configv1alpha1.ReasonDuplicateDisplayNames,
			"the names specified by .spec.identityProviders[].displayName contain duplicates: "+sortedQuoted(duplicates))
	} else {
		c.pass(configv1alpha1.ConditionIdentityProvidersDisplayNamesUnique, "the names specified by .spec.identityProviders[].displayName are unique")
	}
	if len(badGroups) > 0 {
		c.fail(configv1alpha1.ConditionIdentityProvidersObjectRefAPIGroupSuffixValid, configv1alpha1.ReasonAPIGroupUnrecognized,
			fmt.Sprintf("some API groups specified by .spec.identityProviders[].objectRef.apiGroup are not recognized (should be %q): %s", v.idpGroupShown, sortedQuoted(badGroups)))
	} else {
		c.pass(configv1alpha1.ConditionIdentityProvidersObjectRefAPIGroupSuffixValid, "the API groups specified by .spec.identityProviders[].objectRef.apiGroup are recognized")
	}
	if len(badKinds) > 0 {
		c.fail(configv1alpha1.ConditionIdentityProvidersObjectRefKindValid, configv1alpha1.ReasonKindUnrecognized,
			fmt.Sprintf("some kinds specified by .spec.identityProviders[].objectRef.kind are not recognized (should be one of %s): %s", sortedQuoted(v.kinds), sortedQuoted(badKinds)))
	} else {
		c.pass(configv1alpha1.ConditionIdentityProvidersObjectRefKindValid, "the kinds specified by .spec.identityProviders[].objectRef.kind are recognized")
	}
	if len(invalidExpressions) > 0 {
		c.fail(configv1alpha1.ConditionTransformsExpressionsValid, configv1alpha1.ReasonInvalidTransformsExpressions, strings.Join(invalidExpressions, "\n\n"))
	} else {
		c.pass(configv1alpha1.ConditionTransformsExpressionsValid, "the expressions specified by .spec.identityProviders[].transforms.expressions[] are valid")
	}
	if len(failedExamples) > 0 {
		c.fail(configv1alpha1.ConditionTransformsExamplesPassed, configv1alpha1.ReasonTransformsExamplesFailed, strings.Join(failedExamples, "\n\n"))
	} else {
		c.pass(configv1alpha1.ConditionTransformsExamplesPassed, "the examples specified by .spec.identityProviders[].transforms.examples[] had no errors")
	}
}

// compileMessages describes the invalid constants and expressions of the transforms of
// spec.identityProviders[idp], one paragraph each.
func compileMessages(idp int, err error) string {
	list := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		list = joined.Unwrap()
	}
	paragraphs := make([]string, 0, len(list))
	for _, e := range list {
		var fe *idtransform.FieldError
		if !errors.As(e, &fe) {
			paragraphs = append(paragraphs, fmt.Sprintf("spec.identityProvider[%d].transforms was invalid:\n%v", idp, e))
			continue
		}
		suffix := ""
		if fe.Field == "expressions" {
			suffix = ".expression"
		}
		paragraphs = append(paragraphs, fmt.Sprintf("spec.identityProvider[%d].transforms.%s[%d]%s was invalid:\n%v", idp, fe.Field, fe.Index, suffix, fe.Err))
	}
	return strings.Join(paragraphs, "\n\n")
}

// exampleMessages describes the failures of the examples of spec.identityProviders[idp], one
// paragraph each.
func exampleMessages(idp int, failures []idtransform.ExampleFailure) string {
	paragraphs := make([]string, 0, len(failures))
	for _, f := range failures {
		paragraphs = append(paragraphs, fmt.Sprintf(".spec.identityProviders[%d].transforms.examples[%d] example failed:\nexpected: %s\nactual:   %s",
			idp, f.Index, f.Expected, f.Actual))
	}
	return strings.Join(paragraphs, "\n\n")
}

// sortedQuoted lists s quoted, sorted, repeats included, separated by commas.
func sortedQuoted(s []string) string {
	quoted := make([]string, 0, len(s))
	for _, v := range s {
		quoted = append(quoted, fmt.Sprintf("%q", v))
	}
	slices.Sort(quoted)
	return strings.Join(quoted, ", ")
}

// checkLegacyIdentityProvider: without spec.identityProviders, the namespace's only identity
// provider is used, under its own name.
func (v validator) checkLegacyIdentityProvider(r *result) {
	c := &r.conditions
	all := v.inventory.all()
	switch len(all) {
	case 0:
		c.fail(configv1alpha1.ConditionIdentityProvidersFound, configv1alpha1.ReasonLegacyConfigurationIdentityProviderNotFound,
			"no resources were specified by .spec.identityProviders[].objectRef and no identity provider resources have been found: please create an identity provider resource")
	case 1:
		o := all[0]
		c.passWithReason(configv1alpha1.ConditionIdentityProvidersFound, configv1alpha1.ReasonLegacyConfigurationSuccess,
			fmt.Sprintf("no resources were specified by .spec.identityProviders[].objectRef but exactly one identity provider resource has been found: "+
				"using %q as identity provider: please explicitly list identity providers in .spec.identityProviders "+
				"(this legacy configuration mode may be removed in a future version of Pinniped)", o.name))
		r.idps = []issuer.IdentityProvider{{DisplayName: o.name, Type: o.typ, Flows: o.flows, Kind: o.kind, Name: o.name, UID: o.uid}}
	default:
		c.fail(configv1alpha1.ConditionIdentityProvidersFound, configv1alpha1.ReasonIdentityProviderNotSpecified,
			fmt.Sprintf("no resources were specified by .spec.identityProviders[].objectRef and %d identity provider resources have been found: "+
				"please update .spec.identityProviders to specify which identity providers this federation domain should use", len(all)))
	}
	v.checkListedIdentityProviders(c, nil, nil, nil, nil, nil)
}

// conditions collects a FederationDomain's conditions.
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

// unknown records a condition that could not be checked because of another problem.
func (c *conditions) unknown(typ, message string) {
	*c = append(*c, metav1.Condition{Type: typ, Status: metav1.ConditionUnknown, Reason: configv1alpha1.ReasonUnableToValidate, Message: message})
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
func (c *conditions) setReady(issuerURL string) {
	for _, cond := range *c {
		if cond.Status != metav1.ConditionTrue {
			c.fail(configv1alpha1.ConditionReady, configv1alpha1.ReasonNotReady, "the FederationDomain is not ready: see other conditions for details")
			return
		}
	}
	c.pass(configv1alpha1.ConditionReady, "the FederationDomain is ready and its endpoints are available: the discovery endpoint is "+issuerURL+"/.well-known/openid-configuration")
}

// sortConditions orders conditions by type, as upstream Pinniped stores them.
func sortConditions(c []metav1.Condition) {
	slices.SortStableFunc(c, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
}

// phase summarizes the conditions.
func (c conditions) phase() configv1alpha1.Phase {
	if c.ok(configv1alpha1.ConditionReady) {
		return configv1alpha1.PhaseReady
	}
	return configv1alpha1.PhaseError
}
