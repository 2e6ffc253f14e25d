package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// OIDCClientNamePrefix is the prefix every OIDCClient name, and so every client ID, must have.
const OIDCClientNamePrefix = "client.oauth.pinniped.dev-"

// RedirectURI is a URI the Supervisor may redirect to after authorization: https, or http on a
// loopback address (whose port is ignored when matching).
//
// +kubebuilder:validation:Pattern=`^https://.+|^http://(127\.0\.0\.1|\[::1\])(:\d+)?/`
type RedirectURI string

// GrantType is an OAuth 2.0 grant type.
//
// +kubebuilder:validation:Enum="authorization_code";"refresh_token";"urn:ietf:params:oauth:grant-type:token-exchange";"urn:ietf:params:oauth:grant-type:device_code"
type GrantType string

const (
	// GrantTypeAuthorizationCode is the authorization code grant; every client needs it.
	GrantTypeAuthorizationCode GrantType = "authorization_code"
	// GrantTypeRefreshToken is the refresh token grant; needed exactly when the client is allowed
	// the offline_access scope.
	GrantTypeRefreshToken GrantType = "refresh_token"
	// GrantTypeTokenExchange is the RFC 8693 token exchange grant; needed exactly when the client
	// is allowed the pinniped:request-audience scope.
	GrantTypeTokenExchange GrantType = "urn:ietf:params:oauth:grant-type:token-exchange"
	// GrantTypeDeviceCode is the RFC 8628 device authorization grant, for logins on a device
	// without a browser: the user approves on another device's browser. An addition to
	// Pinniped's API.
	GrantTypeDeviceCode GrantType = "urn:ietf:params:oauth:grant-type:device_code"
)

// Scope is an OAuth 2.0 scope an OIDCClient may request.
//
// +kubebuilder:validation:Enum="openid";"offline_access";"username";"groups";"pinniped:request-audience"
type Scope string

const (
	// ScopeOpenID is the OIDC scope; every client needs it.
	ScopeOpenID Scope = "openid"
	// ScopeOfflineAccess allows refresh tokens.
	ScopeOfflineAccess Scope = "offline_access"
	// ScopeUsername adds the username claim to ID tokens.
	ScopeUsername Scope = "username"
	// ScopeGroups adds the groups claim to ID tokens.
	ScopeGroups Scope = "groups"
	// ScopeRequestAudience allows exchanging tokens for ID tokens with another audience; it
	// requires openid, username and groups.
	ScopeRequestAudience Scope = "pinniped:request-audience"
)

// OIDCClientSpec configures what an OIDC client may do.
type OIDCClientSpec struct {
	// AllowedRedirectURIs are the redirect URIs the client may use.
	//
	// +kubebuilder:validation:MinItems=1
	// +listType=set
	AllowedRedirectURIs []RedirectURI `json:"allowedRedirectURIs"`

	// AllowedPostLogoutRedirectURIs are where the Supervisor's end-session endpoint
	// (<issuer>/oauth2/logout, OpenID Connect RP-Initiated Logout) may send the browser back to
	// after it ended a session of this client, given as post_logout_redirect_uri and compared
	// exactly. Unset, the endpoint ends the session and shows a page saying so. An addition to
	// Pinniped's API.
	//
	// +optional
	// +listType=set
	AllowedPostLogoutRedirectURIs []RedirectURI `json:"allowedPostLogoutRedirectURIs,omitempty"`

	// AllowedGrantTypes are the grant types the client may use.
	//
	// +kubebuilder:validation:MinItems=1
	// +listType=set
	AllowedGrantTypes []GrantType `json:"allowedGrantTypes"`

	// AllowedScopes are the scopes the client may request.
	//
	// +kubebuilder:validation:MinItems=1
	// +listType=set
	AllowedScopes []Scope `json:"allowedScopes"`

	// TokenLifetimes overrides the lifetimes of tokens issued to the client.
	//
	// +optional
	TokenLifetimes OIDCClientTokenLifetimes `json:"tokenLifetimes,omitempty"`

	// SessionLifetimes shortens, for this client's sessions, the FederationDomain's: each value
	// applies where it is shorter than the FederationDomain's, and a longer one has no effect. An
	// idleTimeoutSeconds over maxSessionSeconds (32400 when unset) makes the client not Ready
	// (condition SessionLifetimesValid): the CRD checks no rule across fields, so that the API
	// server's messages about OIDCClients stay Pinniped's.
	//
	// +optional
	SessionLifetimes *SessionLifetimes `json:"sessionLifetimes,omitempty"`
}

// OIDCClientTokenLifetimes overrides token lifetimes for one client.
type OIDCClientTokenLifetimes struct {
	// IDTokenSeconds is the lifetime of ID tokens from the authorization code and refresh grants
	// (not token exchange); the Supervisor default when unset.
	//
	// +optional
	// +kubebuilder:validation:Minimum=120
	// +kubebuilder:validation:Maximum=1800
	IDTokenSeconds *int32 `json:"idTokenSeconds,omitempty"`
}

// OIDCClientStatus is the observed state of an OIDCClient.
type OIDCClientStatus struct {
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

	// TotalClientSecrets is the number of client secrets currently stored for the client.
	//
	// +optional
	TotalClientSecrets int32 `json:"totalClientSecrets"`
}

// The CRD checks OIDCClient names with a schema on metadata.name that tools/codegen/update.sh adds,
// as no marker can.

// OIDCClient registers a confidential OAuth client of the Supervisor. Its name is the client ID
// and must start with "client.oauth.pinniped.dev-"; its secrets are created with
// OIDCClientSecretRequests.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:categories=pinniped
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Privileged Scopes",type=string,JSONPath=`.spec.allowedScopes[?(@ == "pinniped:request-audience")]`
// +kubebuilder:printcolumn:name="Client Secrets",type=integer,JSONPath=`.status.totalClientSecrets`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OIDCClient struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired configuration.
	Spec OIDCClientSpec `json:"spec"`

	// Status is the observed state, written by the Supervisor.
	//
	// +optional
	Status OIDCClientStatus `json:"status,omitempty"`
}

// OIDCClientList is a list of OIDCClients.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type OIDCClientList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the OIDCClients.
	Items []OIDCClient `json:"items"`
}
