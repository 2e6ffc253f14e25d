package v1alpha1

// Phase summarizes the conditions of an identity provider.
//
// +kubebuilder:validation:Enum=Pending;Ready;Error
type Phase string

const (
	// PhasePending means the identity provider has not been validated yet.
	PhasePending Phase = "Pending"
	// PhaseReady means every condition is true and the identity provider is in use.
	PhaseReady Phase = "Ready"
	// PhaseError means at least one condition is false.
	PhaseError Phase = "Error"
)

// Condition types reported in the status of identity providers.
const (
	// ConditionTLSConfigurationValid reports whether spec.tls could be turned into a CA pool.
	ConditionTLSConfigurationValid = "TLSConfigurationValid"
	// ConditionClientCredentialsSecretValid reports whether the OIDC or GitHub client Secret
	// exists, has the right type and holds clientID and clientSecret.
	ConditionClientCredentialsSecretValid = "ClientCredentialsSecretValid"

	// ConditionOIDCDiscoverySucceeded reports whether the issuer's OIDC discovery document was
	// fetched and is usable.
	ConditionOIDCDiscoverySucceeded = "OIDCDiscoverySucceeded"
	// ConditionAdditionalAuthorizeParametersValid reports whether no additional authorize
	// parameter overrides one the Supervisor sets.
	ConditionAdditionalAuthorizeParametersValid = "AdditionalAuthorizeParametersValid"

	// ConditionBindSecretValid reports whether the LDAP or Active Directory bind Secret exists,
	// has type kubernetes.io/basic-auth and holds username and password.
	ConditionBindSecretValid = "BindSecretValid"
	// ConditionLDAPConnectionValid reports whether the Supervisor could connect and bind.
	ConditionLDAPConnectionValid = "LDAPConnectionValid"
	// ConditionSearchBaseFound reports whether the Active Directory search bases are known, from
	// the spec or from the server's defaultNamingContext.
	ConditionSearchBaseFound = "SearchBaseFound"

	// ConditionHostValid reports whether a GitHubIdentityProvider's spec.githubAPI.host is usable.
	ConditionHostValid = "HostValid"
	// ConditionOrganizationsPolicyValid reports whether the organizations policy agrees with the
	// list of allowed organizations.
	ConditionOrganizationsPolicyValid = "OrganizationsPolicyValid"
	// ConditionGitHubConnectionValid reports whether the Supervisor could reach the GitHub API.
	ConditionGitHubConnectionValid = "GitHubConnectionValid"
	// ConditionClaimsValid reports whether the username and groups claims are supported.
	ConditionClaimsValid = "ClaimsValid"
)

// Condition reasons reported in the status of identity providers.
const (
	// ReasonSuccess is the reason of every true condition.
	ReasonSuccess = "Success"
	// ReasonUnableToValidate marks a condition that was not checked because an earlier one failed.
	ReasonUnableToValidate = "UnableToValidate"
	// ReasonInvalid means a field holds an unusable value.
	ReasonInvalid = "Invalid"
	// ReasonInvalidTLSConfig means spec.tls does not yield a usable CA bundle.
	ReasonInvalidTLSConfig = "InvalidTLSConfig"

	// ReasonSecretNotFound means a referenced Secret does not exist.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecretWrongType means a referenced Secret has the wrong type.
	ReasonSecretWrongType = "SecretWrongType"
	// ReasonSecretMissingKeys means a referenced Secret lacks required keys.
	ReasonSecretMissingKeys = "SecretMissingKeys"

	// ReasonUnreachable means the OIDC issuer could not be reached.
	ReasonUnreachable = "Unreachable"
	// ReasonInvalidResponse means the OIDC issuer's discovery document is unusable.
	ReasonInvalidResponse = "InvalidResponse"
	// ReasonDisallowedParameterName means an additional authorize parameter overrides one the
	// Supervisor sets.
	ReasonDisallowedParameterName = "DisallowedParameterName"

	// ReasonLDAPConnectionError means connecting or binding to the LDAP server failed.
	ReasonLDAPConnectionError = "LDAPConnectionError"
	// ReasonUsingConfigurationFromSpec means the Active Directory search bases come from the spec.
	ReasonUsingConfigurationFromSpec = "UsingConfigurationFromSpec"
	// ReasonErrorFetchingSearchBase means the server's defaultNamingContext could not be read.
	ReasonErrorFetchingSearchBase = "ErrorFetchingSearchBase"

	// ReasonUnableToDialServer means a connection to the GitHub API failed.
	ReasonUnableToDialServer = "UnableToDialServer"
)
