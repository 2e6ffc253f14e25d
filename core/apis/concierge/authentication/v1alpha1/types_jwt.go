package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// JWTAuthenticatorSpec configures how JWTs from one OIDC issuer are validated.
type JWTAuthenticatorSpec struct {
	// Issuer is the https URL of the OIDC issuer. It is used for OIDC discovery and must equal the
	// tokens' iss claim. It must not have a query, a fragment or the discovery path.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^https://`
	Issuer string `json:"issuer"`

	// Audience is the value the tokens' aud claim must contain.
	//
	// +kubebuilder:validation:MinLength=1
	Audience string `json:"audience"`

	// Claims says how the token's claims map to the user's identity.
	//
	// +optional
	Claims JWTTokenClaims `json:"claims,omitempty"`

	// ClaimValidationRules are checked against the token's claims before they are mapped to a
	// user; a token that fails one is refused.
	//
	// +optional
	ClaimValidationRules []ClaimValidationRule `json:"claimValidationRules,omitempty"`

	// UserValidationRules are checked against the user the claims were mapped to; a user that
	// fails one is refused.
	//
	// +optional
	UserValidationRules []UserValidationRule `json:"userValidationRules,omitempty"`

	// TLS configures how to verify the issuer's serving certificate.
	//
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`
}

// JWTTokenClaims says how the claims of a JWT map to the user's identity, each part either by
// naming a claim or by a CEL expression over the variable claims, as Kubernetes'
// AuthenticationConfiguration claimMappings do.
type JWTTokenClaims struct {
	// Username is the claim that holds the username; "username" when it and UsernameExpression
	// are both empty. It may not be set together with UsernameExpression.
	//
	// +optional
	Username string `json:"username,omitempty"`

	// UsernameExpression is a CEL expression over claims that yields the username, a non-empty
	// string. It may not be set together with Username.
	//
	// +optional
	UsernameExpression string `json:"usernameExpression,omitempty"`

	// Groups is the claim that holds the group names, a string or a list of strings; "groups"
	// when it and GroupsExpression are both empty. It may not be set together with
	// GroupsExpression.
	//
	// +optional
	Groups string `json:"groups,omitempty"`

	// GroupsExpression is a CEL expression over claims that yields the group names: a string,
	// a list of strings, or null for none. It may not be set together with Groups.
	//
	// +optional
	GroupsExpression string `json:"groupsExpression,omitempty"`

	// Extra are the user's extra attributes, each computed by a CEL expression over claims.
	//
	// +optional
	Extra []ExtraMapping `json:"extra,omitempty"`
}

// ExtraMapping computes one extra attribute of the user.
type ExtraMapping struct {
	// Key names the attribute: a lowercase domain-prefixed path such as "example.com/team",
	// outside the k8s.io and kubernetes.io domains, without "=".
	Key string `json:"key"`

	// ValueExpression is a CEL expression over claims that yields the values: a string, a list
	// of strings, or null. No value leaves the attribute out.
	ValueExpression string `json:"valueExpression"`
}

// ClaimValidationRule is one condition a token's claims must meet: either Claim with
// RequiredValue, or Expression with an optional Message.
type ClaimValidationRule struct {
	// Claim names a claim that must be present and equal RequiredValue.
	//
	// +optional
	Claim string `json:"claim,omitempty"`

	// RequiredValue is the string value Claim must have. Only with Claim.
	//
	// +optional
	RequiredValue string `json:"requiredValue,omitempty"`

	// Expression is a CEL expression over claims that must yield true. Not with Claim.
	//
	// +optional
	Expression string `json:"expression,omitempty"`

	// Message explains a failed Expression in the Concierge's logs. Only with Expression.
	//
	// +optional
	Message string `json:"message,omitempty"`
}

// UserValidationRule is one condition the mapped user must meet.
type UserValidationRule struct {
	// Expression is a CEL expression over user (username, uid, groups, extra) that must yield
	// true.
	Expression string `json:"expression"`

	// Message explains a failed Expression in the Concierge's logs.
	//
	// +optional
	Message string `json:"message,omitempty"`
}

// JWTAuthenticatorStatus is the observed state of a JWTAuthenticator.
type JWTAuthenticatorStatus struct {
	// Conditions are the results of the checks made on the spec, keyed by type.
	//
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// Phase summarizes the conditions.
	//
	// +optional
	// +kubebuilder:default=Pending
	Phase Phase `json:"phase,omitempty"`
}

// JWTAuthenticator makes the Concierge accept JWTs signed by one OIDC issuer for one audience.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:scope=Cluster,categories=pinniped;pinniped-authenticator;pinniped-authenticators
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Issuer",type=string,JSONPath=`.spec.issuer`
// +kubebuilder:printcolumn:name="Audience",type=string,JSONPath=`.spec.audience`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type JWTAuthenticator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired configuration.
	Spec JWTAuthenticatorSpec `json:"spec"`

	// Status is the observed state, written by the Concierge.
	//
	// +optional
	Status JWTAuthenticatorStatus `json:"status,omitempty"`
}

// JWTAuthenticatorList is a list of JWTAuthenticators.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type JWTAuthenticatorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the JWTAuthenticators.
	Items []JWTAuthenticator `json:"items"`
}
