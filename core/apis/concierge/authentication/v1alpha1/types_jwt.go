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

	// Claims names the token claims that carry the username and groups.
	//
	// +optional
	Claims JWTTokenClaims `json:"claims,omitempty"`

	// TLS configures how to verify the issuer's serving certificate.
	//
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`
}

// JWTTokenClaims names the claims of a JWT that hold the user's identity.
type JWTTokenClaims struct {
	// Username is the claim that holds the username; "username" when empty.
	//
	// +optional
	Username string `json:"username,omitempty"`

	// Groups is the claim that holds the list of group names; "groups" when empty.
	//
	// +optional
	Groups string `json:"groups,omitempty"`
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
