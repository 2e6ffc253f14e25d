package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TokenCredentialRequestSpec is the token to exchange and the authenticator that validates it.
type TokenCredentialRequestSpec struct {
	// Token is the bearer token to exchange, for example an ID token or a static token.
	//
	// +optional
	Token string `json:"token,omitempty"`

	// Authenticator refers to the JWTAuthenticator or WebhookAuthenticator that validates Token.
	Authenticator corev1.TypedLocalObjectReference `json:"authenticator"`
}

// TokenCredentialRequestStatus is the outcome of the exchange.
type TokenCredentialRequestStatus struct {
	// Credential is the issued credential; nil when the exchange failed.
	//
	// +optional
	Credential *ClusterCredential `json:"credential,omitempty"`

	// Message explains a failure without revealing why the token was rejected.
	//
	// +optional
	Message *string `json:"message,omitempty"`
}

// ClusterCredential is a short-lived credential for the cluster's API server.
type ClusterCredential struct {
	// ExpirationTimestamp is when the credential stops working.
	ExpirationTimestamp metav1.Time `json:"expirationTimestamp,omitempty"`

	// Token is a bearer token for the cluster.
	Token string `json:"token,omitempty"`

	// ClientCertificateData is a PEM client certificate for the cluster.
	ClientCertificateData string `json:"clientCertificateData,omitempty"`

	// ClientKeyData is the PEM private key of ClientCertificateData.
	ClientKeyData string `json:"clientKeyData,omitempty"`
}

// TokenCredentialRequest exchanges a token for a short-lived cluster credential. It is served by
// the Concierge (create; list answers an empty list) and never stored.
//
// +genclient
// +genclient:nonNamespaced
// +genclient:onlyVerbs=create
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type TokenCredentialRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the token to exchange.
	Spec TokenCredentialRequestSpec `json:"spec,omitempty"`

	// Status is the outcome of the exchange.
	Status TokenCredentialRequestStatus `json:"status,omitempty"`
}

// TokenCredentialRequestList is a list of TokenCredentialRequests; listing always returns an
// empty list, since requests are not stored.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type TokenCredentialRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the TokenCredentialRequests.
	Items []TokenCredentialRequest `json:"items"`
}
