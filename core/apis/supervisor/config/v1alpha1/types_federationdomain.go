package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FederationDomainSpec configures one OIDC issuer of the Supervisor.
type FederationDomainSpec struct {
	// Issuer is the https URL of this OIDC issuer; every endpoint of the issuer is served below it.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() == 'https'",message="issuer must be an HTTPS URL"
	Issuer string `json:"issuer"`

	// TLS selects the serving certificate for the issuer's hostname.
	//
	// +optional
	TLS *FederationDomainTLSSpec `json:"tls,omitempty"`

	// IdentityProviders are the identity providers users of this issuer log in with. When empty,
	// the single identity provider in the namespace is used, and having several is an error.
	//
	// +optional
	IdentityProviders []FederationDomainIdentityProvider `json:"identityProviders,omitempty"`

	// SessionLifetimes bounds the sessions of this issuer's users: an absolute length and an
	// idle timeout. Unset, sessions last nine hours from the login, as Pinniped's.
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.idleTimeoutSeconds) || self.idleTimeoutSeconds <= (has(self.maxSessionSeconds) ? self.maxSessionSeconds : 32400)",message="idleTimeoutSeconds must not exceed maxSessionSeconds (32400 when unset)"
	SessionLifetimes *SessionLifetimes `json:"sessionLifetimes,omitempty"`
}

// FederationDomainTLSSpec selects the serving certificate of a FederationDomain.
type FederationDomainTLSSpec struct {
	// SecretName is a Secret of type kubernetes.io/tls in the Supervisor's namespace, served for
	// TLS connections whose SNI matches the issuer's hostname. It is ignored when the hostname is
	// an IP address. When empty, the Supervisor's default certificate is served.
	//
	// +optional
	SecretName string `json:"secretName,omitempty"`
}

// FederationDomainIdentityProvider adds one identity provider to a FederationDomain.
type FederationDomainIdentityProvider struct {
	// DisplayName names the identity provider to users and in kubeconfigs; unique in the
	// FederationDomain. It is also recorded in downstream subjects, so changing it changes users'
	// identities.
	//
	// +kubebuilder:validation:MinLength=1
	DisplayName string `json:"displayName"`

	// ObjectRef refers to an OIDCIdentityProvider, LDAPIdentityProvider,
	// ActiveDirectoryIdentityProvider or GitHubIdentityProvider in the same namespace; the
	// apiGroup is idp.supervisor with the configured suffix.
	ObjectRef corev1.TypedLocalObjectReference `json:"objectRef"`

	// Transforms change or reject identities from this identity provider at login and refresh.
	//
	// +optional
	Transforms FederationDomainTransforms `json:"transforms,omitempty"`
}

// FederationDomainTransforms are CEL expressions run, in order, on the username and groups from
// an identity provider, with constants they can use and examples that test them.
type FederationDomainTransforms struct {
	// Constants are values the expressions read as strConst.<name> or strListConst.<name>.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	Constants []FederationDomainTransformsConstant `json:"constants,omitempty"`

	// Expressions run in order; a policy returning false rejects the login.
	//
	// +optional
	Expressions []FederationDomainTransformsExpression `json:"expressions,omitempty"`

	// Examples are self-tests of the expressions; if one fails, the identity provider is not
	// offered by this FederationDomain.
	//
	// +optional
	Examples []FederationDomainTransformsExample `json:"examples,omitempty"`
}

// TransformsConstantType is the type of a transforms constant.
//
// +kubebuilder:validation:Enum=string;stringList
type TransformsConstantType string

const (
	// TransformsConstantTypeString is a constant whose value is StringValue.
	TransformsConstantTypeString TransformsConstantType = "string"
	// TransformsConstantTypeStringList is a constant whose value is StringListValue.
	TransformsConstantTypeStringList TransformsConstantType = "stringList"
)

// FederationDomainTransformsConstant is a named value available to transform expressions.
type FederationDomainTransformsConstant struct {
	// Name is how expressions refer to the constant.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][_a-zA-Z0-9]*$`
	Name string `json:"name"`

	// Type says which of the value fields holds the value.
	Type TransformsConstantType `json:"type"`

	// StringValue is the value of a string constant.
	//
	// +optional
	StringValue string `json:"stringValue,omitempty"`

	// StringListValue is the value of a stringList constant.
	//
	// +optional
	StringListValue []string `json:"stringListValue,omitempty"`
}

// TransformsExpressionType is the kind of a transform expression, which fixes its result type.
//
// +kubebuilder:validation:Enum=policy/v1;username/v1;groups/v1
type TransformsExpressionType string

const (
	// TransformsExpressionTypePolicy returns a bool; false rejects the login.
	TransformsExpressionTypePolicy TransformsExpressionType = "policy/v1"
	// TransformsExpressionTypeUsername returns the new username.
	TransformsExpressionTypeUsername TransformsExpressionType = "username/v1"
	// TransformsExpressionTypeGroups returns the new list of groups.
	TransformsExpressionTypeGroups TransformsExpressionType = "groups/v1"
)

// FederationDomainTransformsExpression is one CEL expression.
type FederationDomainTransformsExpression struct {
	// Type is the kind of expression.
	Type TransformsExpressionType `json:"type"`

	// Expression is the CEL source. It can read username, groups, strConst and strListConst.
	//
	// +kubebuilder:validation:MinLength=1
	Expression string `json:"expression"`

	// Message is shown to a user rejected by a policy expression; a generic message when empty.
	//
	// +optional
	Message string `json:"message,omitempty"`
}

// FederationDomainTransformsExample is an input identity and the result the transforms must
// produce for it.
type FederationDomainTransformsExample struct {
	// Username is the username from the identity provider.
	//
	// +kubebuilder:validation:MinLength=1
	Username string `json:"username"`

	// Groups are the groups from the identity provider.
	//
	// +optional
	Groups []string `json:"groups,omitempty"`

	// Expects is the result the transforms must produce.
	Expects FederationDomainTransformsExampleExpects `json:"expects"`
}

// FederationDomainTransformsExampleExpects is the expected result of a transforms example.
type FederationDomainTransformsExampleExpects struct {
	// Username is the expected username after the transforms; ignored when Rejected.
	//
	// +optional
	Username string `json:"username,omitempty"`

	// Groups are the expected groups after the transforms; ignored when Rejected.
	//
	// +optional
	Groups []string `json:"groups,omitempty"`

	// Rejected says a policy is expected to reject the identity.
	//
	// +optional
	Rejected bool `json:"rejected,omitempty"`

	// Message is the expected rejection message when Rejected.
	//
	// +optional
	Message string `json:"message,omitempty"`
}

// FederationDomainSecrets names the Secrets the Supervisor generated for a FederationDomain.
type FederationDomainSecrets struct {
	// JWKS holds the key that signs ID tokens, and the public JWKS.
	//
	// +optional
	JWKS corev1.LocalObjectReference `json:"jwks,omitempty"`

	// TokenSigningKey holds the HMAC key of opaque tokens and authorization codes.
	//
	// +optional
	TokenSigningKey corev1.LocalObjectReference `json:"tokenSigningKey,omitempty"`

	// StateSigningKey holds the key that signs the upstream state parameter.
	//
	// +optional
	StateSigningKey corev1.LocalObjectReference `json:"stateSigningKey,omitempty"`

	// StateEncryptionKey holds the key that encrypts the upstream state parameter.
	//
	// +optional
	StateEncryptionKey corev1.LocalObjectReference `json:"stateEncryptionKey,omitempty"`
}

// FederationDomainStatus is the observed state of a FederationDomain.
type FederationDomainStatus struct {
	// Phase summarizes the conditions.
	//
	// +optional
	// +kubebuilder:default=Pending
	Phase Phase `json:"phase,omitempty"`

	// Conditions are the results of the checks made on the spec, keyed by type.
	//
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// Secrets names the Secrets generated for this FederationDomain.
	//
	// +optional
	Secrets FederationDomainSecrets `json:"secrets,omitempty"`
}

// FederationDomain is one OIDC issuer of the Supervisor, federating one or more identity
// providers.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:categories=pinniped
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Issuer",type=string,JSONPath=`.spec.issuer`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FederationDomain struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired configuration.
	Spec FederationDomainSpec `json:"spec"`

	// Status is the observed state, written by the Supervisor.
	//
	// +optional
	Status FederationDomainStatus `json:"status,omitempty"`
}

// FederationDomainList is a list of FederationDomains.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type FederationDomainList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the FederationDomains.
	Items []FederationDomain `json:"items"`
}
