package v1alpha1

// Phase summarizes the conditions of a FederationDomain, an OIDCClient or a SessionRevocation.
//
// +kubebuilder:validation:Enum=Pending;Ready;Error
type Phase string

const (
	// PhasePending means the object has not been validated yet.
	PhasePending Phase = "Pending"
	// PhaseReady means every condition is true and the object is in use.
	PhaseReady Phase = "Ready"
	// PhaseError means at least one condition is false.
	PhaseError Phase = "Error"
)

// Condition types reported in the status of FederationDomains, OIDCClients and SessionRevocations.
const (
	// ConditionReady is true when every other condition of a FederationDomain is true.
	ConditionReady = "Ready"
	// ConditionIssuerURLValid reports whether spec.issuer is a usable https URL.
	ConditionIssuerURLValid = "IssuerURLValid"
	// ConditionOneTLSSecretPerIssuerHostname reports whether all FederationDomains with this
	// issuer's hostname name the same TLS Secret.
	ConditionOneTLSSecretPerIssuerHostname = "OneTLSSecretPerIssuerHostname"
	// ConditionIssuerIsUnique reports whether no other FederationDomain has the same issuer.
	ConditionIssuerIsUnique = "IssuerIsUnique"
	// ConditionIdentityProvidersFound reports whether every referenced identity provider exists,
	// or, with no spec.identityProviders, whether exactly one identity provider exists.
	ConditionIdentityProvidersFound = "IdentityProvidersFound"
	// ConditionIdentityProvidersDisplayNamesUnique reports whether display names are unique.
	ConditionIdentityProvidersDisplayNamesUnique = "IdentityProvidersDisplayNamesUnique"
	// ConditionIdentityProvidersObjectRefAPIGroupSuffixValid reports whether every objectRef
	// names the idp.supervisor group with the configured suffix.
	ConditionIdentityProvidersObjectRefAPIGroupSuffixValid = "IdentityProvidersObjectRefAPIGroupSuffixValid"
	// ConditionIdentityProvidersObjectRefKindValid reports whether every objectRef names a
	// supported identity provider kind.
	ConditionIdentityProvidersObjectRefKindValid = "IdentityProvidersObjectRefKindValid"
	// ConditionTransformsExpressionsValid reports whether every transform expression compiles.
	ConditionTransformsExpressionsValid = "TransformsExpressionsValid"
	// ConditionTransformsExamplesPassed reports whether every transform example gives the
	// expected result.
	ConditionTransformsExamplesPassed = "TransformsExamplesPassed"
	// ConditionSessionLifetimesValid reports whether spec.sessionLifetimes of a FederationDomain
	// or an OIDCClient is within its bounds.
	ConditionSessionLifetimesValid = "SessionLifetimesValid"

	// ConditionClientSecretExists reports whether an OIDCClient has at least one valid secret.
	ConditionClientSecretExists = "ClientSecretExists"
	// ConditionAllowedGrantTypesValid reports whether an OIDCClient's grant types are consistent
	// with its scopes.
	ConditionAllowedGrantTypesValid = "AllowedGrantTypesValid"
	// ConditionAllowedScopesValid reports whether an OIDCClient's scopes are consistent with its
	// grant types.
	ConditionAllowedScopesValid = "AllowedScopesValid"
	// ConditionFederationDomainFound says whether a SessionRevocation's FederationDomain exists.
	ConditionFederationDomainFound = "FederationDomainFound"
	// ConditionSessionsRevoked says whether the stored sessions a SessionRevocation matches were
	// ended.
	ConditionSessionsRevoked = "SessionsRevoked"
)

// Condition reasons reported in the status of FederationDomains, OIDCClients and SessionRevocations.
const (
	// ReasonSuccess is the reason of every true condition.
	ReasonSuccess = "Success"
	// ReasonNotReady is the reason of a false Ready condition.
	ReasonNotReady = "NotReady"
	// ReasonUnableToValidate marks a condition that was not checked because an earlier one failed.
	ReasonUnableToValidate = "UnableToValidate"

	// ReasonInvalidIssuerURL means spec.issuer is not a usable https URL.
	ReasonInvalidIssuerURL = "InvalidIssuerURL"
	// ReasonDuplicateIssuer means another FederationDomain has the same issuer.
	ReasonDuplicateIssuer = "DuplicateIssuer"
	// ReasonDifferentSecretRefsFound means FederationDomains with the same issuer hostname name
	// different TLS Secrets.
	ReasonDifferentSecretRefsFound = "DifferentSecretRefsFound"
	// ReasonLegacyConfigurationSuccess means spec.identityProviders is empty and the single
	// identity provider in the namespace is used.
	ReasonLegacyConfigurationSuccess = "LegacyConfigurationSuccess"
	// ReasonLegacyConfigurationIdentityProviderNotFound means spec.identityProviders is empty and
	// there is no identity provider in the namespace.
	ReasonLegacyConfigurationIdentityProviderNotFound = "LegacyConfigurationIdentityProviderNotFound"
	// ReasonIdentityProvidersObjectRefsNotFound means some referenced identity providers do not
	// exist.
	ReasonIdentityProvidersObjectRefsNotFound = "IdentityProvidersObjectRefsNotFound"
	// ReasonIdentityProviderNotSpecified means spec.identityProviders is empty while the namespace
	// holds several identity providers.
	ReasonIdentityProviderNotSpecified = "IdentityProviderNotSpecified"
	// ReasonDuplicateDisplayNames means two entries of spec.identityProviders share a display name.
	ReasonDuplicateDisplayNames = "DuplicateDisplayNames"
	// ReasonAPIGroupUnrecognized means an objectRef names an unknown API group.
	ReasonAPIGroupUnrecognized = "APIGroupUnrecognized"
	// ReasonKindUnrecognized means an objectRef names an unknown kind.
	ReasonKindUnrecognized = "KindUnrecognized"
	// ReasonInvalidTransformsExpressions means a transform expression does not compile.
	ReasonInvalidTransformsExpressions = "InvalidTransformsExpressions"
	// ReasonTransformsExamplesFailed means a transform example gave an unexpected result.
	ReasonTransformsExamplesFailed = "TransformsExamplesFailed"
	// ReasonInvalidSessionLifetimes means a value of spec.sessionLifetimes is out of its bounds.
	ReasonInvalidSessionLifetimes = "InvalidSessionLifetimes"

	// ReasonMissingRequiredValue means an OIDCClient lacks a grant type or scope that another one
	// requires.
	ReasonMissingRequiredValue = "MissingRequiredValue"
	// ReasonNoClientSecretFound means an OIDCClient has no client secret.
	ReasonNoClientSecretFound = "NoClientSecretFound"
	// ReasonInvalidClientSecretFound means an OIDCClient's stored secrets are unreadable.
	ReasonInvalidClientSecretFound = "InvalidClientSecretFound"

	// ReasonFederationDomainNotFound means no FederationDomain has a SessionRevocation's
	// spec.federationDomainName: the revocation matches no session until one is created.
	ReasonFederationDomainNotFound = "FederationDomainNotFound"
	// ReasonRevocationFailed means the Supervisor could not end every stored session a
	// SessionRevocation matches; it retries, and refuses their refreshes meanwhile.
	ReasonRevocationFailed = "RevocationFailed"
)
