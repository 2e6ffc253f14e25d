package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// OIDCIdentityProviderSpec configures an upstream OIDC issuer.
type OIDCIdentityProviderSpec struct {
	// Issuer is the https URL of the upstream issuer; its discovery document is read from
	// <issuer>/.well-known/openid-configuration.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^https://`
	Issuer string `json:"issuer"`

	// TLS configures how to verify the issuer's serving certificate.
	//
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`

	// AuthorizationConfig adjusts the authorization requests sent to the issuer.
	//
	// +optional
	AuthorizationConfig OIDCAuthorizationConfig `json:"authorizationConfig,omitempty"`

	// Claims maps the upstream ID token claims to the user's identity.
	//
	// +optional
	Claims OIDCClaims `json:"claims,omitempty"`

	// Client names the Secret holding the Supervisor's client credentials at the issuer.
	Client OIDCClientCredentials `json:"client"`
}

// OIDCAuthorizationConfig adjusts the authorization requests sent to an upstream issuer.
type OIDCAuthorizationConfig struct {
	// AdditionalScopes are the scopes requested besides openid, which is always requested. When
	// empty, "openid offline_access email profile" is requested.
	//
	// +optional
	AdditionalScopes []string `json:"additionalScopes,omitempty"`

	// AdditionalAuthorizeParameters are added to every authorization request. They cannot
	// override response_type, scope, client_id, state, nonce, code_challenge,
	// code_challenge_method, redirect_uri or hd.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	AdditionalAuthorizeParameters []Parameter `json:"additionalAuthorizeParameters,omitempty"`

	// AllowPasswordGrant lets the CLI log in with a username and password through the issuer's
	// resource owner password credentials grant (RFC 6749 section 4.3).
	//
	// +optional
	AllowPasswordGrant bool `json:"allowPasswordGrant,omitempty"`
}

// Parameter is one query parameter.
type Parameter struct {
	// Name is the parameter name.
	//
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Value is the parameter value.
	//
	// +optional
	Value string `json:"value,omitempty"`
}

// OIDCClaims maps upstream ID token claims to the user's identity.
type OIDCClaims struct {
	// Username is the claim that holds the username. When empty, the username is
	// "<issuer>?sub=<sub>". When it is "email", the email_verified claim must not be false.
	//
	// +optional
	Username string `json:"username,omitempty"`

	// Groups is the claim that holds the groups; no groups when empty.
	//
	// +optional
	Groups string `json:"groups,omitempty"`

	// AdditionalClaimMappings copies upstream claims (values) into the additionalClaims claim of
	// downstream ID tokens, under new names (keys).
	//
	// +optional
	AdditionalClaimMappings map[string]string `json:"additionalClaimMappings,omitempty"`
}

// OIDCClientCredentials names the Secret holding OAuth client credentials.
type OIDCClientCredentials struct {
	// SecretName is a Secret of type secrets.pinniped.dev/oidc-client in the Supervisor's
	// namespace with the keys clientID and clientSecret. Upstream's schema puts no length limit on
	// it; an empty name shows in the ClientCredentialsSecretValid condition.
	SecretName string `json:"secretName"`
}

// OIDCIdentityProvider configures an upstream OIDC issuer for the Supervisor.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:categories=pinniped;pinniped-idp;pinniped-idps
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Issuer",type=string,JSONPath=`.spec.issuer`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OIDCIdentityProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired configuration.
	Spec OIDCIdentityProviderSpec `json:"spec"`

	// Status is the observed state, written by the Supervisor.
	//
	// +optional
	Status IdentityProviderStatus `json:"status,omitempty"`
}

// OIDCIdentityProviderList is a list of OIDCIdentityProviders.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type OIDCIdentityProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the OIDCIdentityProviders.
	Items []OIDCIdentityProvider `json:"items"`
}
