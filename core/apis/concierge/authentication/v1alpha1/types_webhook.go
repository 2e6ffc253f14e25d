package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// WebhookAuthenticatorSpec configures the webhook that validates tokens.
type WebhookAuthenticatorSpec struct {
	// Endpoint is the https URL to which TokenReview requests are posted.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^https://`
	Endpoint string `json:"endpoint"`

	// TLS configures how to verify the webhook's serving certificate.
	//
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`
}

// WebhookAuthenticatorStatus is the observed state of a WebhookAuthenticator.
type WebhookAuthenticatorStatus struct {
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

// WebhookAuthenticator makes the Concierge validate tokens by posting authentication.k8s.io
// TokenReviews to a webhook.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:scope=Cluster,categories=pinniped;pinniped-authenticator;pinniped-authenticators
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.endpoint`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WebhookAuthenticator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired configuration.
	Spec WebhookAuthenticatorSpec `json:"spec"`

	// Status is the observed state, written by the Concierge.
	//
	// +optional
	Status WebhookAuthenticatorStatus `json:"status,omitempty"`
}

// WebhookAuthenticatorList is a list of WebhookAuthenticators.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type WebhookAuthenticatorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the WebhookAuthenticators.
	Items []WebhookAuthenticator `json:"items"`
}
