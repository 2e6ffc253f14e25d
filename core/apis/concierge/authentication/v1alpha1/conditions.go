package v1alpha1

// Phase summarizes the conditions of an authenticator.
//
// +kubebuilder:validation:Enum=Pending;Ready;Error
type Phase string

const (
	// PhasePending means the authenticator has not been validated yet.
	PhasePending Phase = "Pending"
	// PhaseReady means every condition is true and the authenticator is in use.
	PhaseReady Phase = "Ready"
	// PhaseError means at least one condition is false.
	PhaseError Phase = "Error"
)

// Condition types reported in the status of JWTAuthenticators and WebhookAuthenticators.
const (
	// ConditionReady is true when every other condition is true.
	ConditionReady = "Ready"
	// ConditionTLSConfigurationValid reports whether spec.tls could be turned into a CA pool.
	ConditionTLSConfigurationValid = "TLSConfigurationValid"
	// ConditionAuthenticatorValid reports whether a token authenticator could be built.
	ConditionAuthenticatorValid = "AuthenticatorValid"

	// ConditionIssuerURLValid reports whether a JWTAuthenticator's spec.issuer is acceptable.
	ConditionIssuerURLValid = "IssuerURLValid"
	// ConditionDiscoveryURLValid reports whether the issuer's OIDC discovery document was fetched.
	ConditionDiscoveryURLValid = "DiscoveryURLValid"
	// ConditionJWKSURLValid reports whether the discovery document names a usable jwks_uri.
	ConditionJWKSURLValid = "JWKSURLValid"
	// ConditionJWKSFetchValid reports whether the issuer's signing keys were fetched.
	ConditionJWKSFetchValid = "JWKSFetchValid"

	// ConditionEndpointURLValid reports whether a WebhookAuthenticator's spec.endpoint is acceptable.
	ConditionEndpointURLValid = "EndpointURLValid"
	// ConditionWebhookConnectionValid reports whether a TLS connection to the webhook succeeded.
	ConditionWebhookConnectionValid = "WebhookConnectionValid"
)

// Condition reasons reported in the status of JWTAuthenticators and WebhookAuthenticators.
const (
	// ReasonSuccess is the reason of every true condition.
	ReasonSuccess = "Success"
	// ReasonNotReady is the reason of a false Ready condition.
	ReasonNotReady = "NotReady"
	// ReasonUnableToValidate marks a condition that was not checked because an earlier one failed.
	ReasonUnableToValidate = "UnableToValidate"
	// ReasonInvalidTLSConfig means spec.tls does not yield a usable CA bundle.
	ReasonInvalidTLSConfig = "InvalidTLSConfig"
	// ReasonInvalidAuthenticator means the token authenticator could not be built.
	ReasonInvalidAuthenticator = "InvalidAuthenticator"

	// ReasonInvalidIssuerURL means spec.issuer does not parse as a URL.
	ReasonInvalidIssuerURL = "InvalidIssuerURL"
	// ReasonInvalidIssuerURLScheme means spec.issuer is not an https URL.
	ReasonInvalidIssuerURLScheme = "InvalidIssuerURLScheme"
	// ReasonInvalidIssuerURLContainsFragment means spec.issuer has a fragment.
	ReasonInvalidIssuerURLContainsFragment = "InvalidIssuerURLContainsFragment"
	// ReasonInvalidIssuerURLContainsQueryParams means spec.issuer has query parameters.
	ReasonInvalidIssuerURLContainsQueryParams = "InvalidIssuerURLContainsQueryParams"
	// ReasonInvalidIssuerURLContainsWellKnownEndpoint means spec.issuer ends in the discovery path.
	ReasonInvalidIssuerURLContainsWellKnownEndpoint = "InvalidIssuerURLContainsWellKnownEndpoint"
	// ReasonInvalidDiscoveryProbe means the OIDC discovery document could not be fetched or parsed.
	ReasonInvalidDiscoveryProbe = "InvalidDiscoveryProbe"
	// ReasonInvalidProviderJWKSURL means the discovery document's jwks_uri is missing or unparsable.
	ReasonInvalidProviderJWKSURL = "InvalidProviderJWKSURL"
	// ReasonInvalidProviderJWKSURLScheme means the discovery document's jwks_uri is not https.
	ReasonInvalidProviderJWKSURLScheme = "InvalidProviderJWKSURLScheme"
	// ReasonInvalidCouldNotFetchJWKS means the issuer's signing keys could not be fetched.
	ReasonInvalidCouldNotFetchJWKS = "InvalidCouldNotFetchJWKS"

	// ReasonInvalidEndpointURL means spec.endpoint does not parse as a URL.
	ReasonInvalidEndpointURL = "InvalidEndpointURL"
	// ReasonInvalidEndpointURLScheme means spec.endpoint is not an https URL.
	ReasonInvalidEndpointURLScheme = "InvalidEndpointURLScheme"
	// ReasonInvalidEndpointCannotDetermineProxy means the proxy for spec.endpoint could not be
	// determined from the HTTPS_PROXY and NO_PROXY settings.
	ReasonInvalidEndpointCannotDetermineProxy = "InvalidEndpointCannotDetermineProxy"
	// ReasonUnableToDialServer means a TLS connection to the webhook failed.
	ReasonUnableToDialServer = "UnableToDialServer"
	// ReasonUnableToCreateClient means no HTTP client could be built for the webhook.
	ReasonUnableToCreateClient = "UnableToCreateClient"
	// ReasonUnableToInstantiateWebhook means the webhook token authenticator could not be built.
	ReasonUnableToInstantiateWebhook = "UnableToInstantiateWebhook"
)
