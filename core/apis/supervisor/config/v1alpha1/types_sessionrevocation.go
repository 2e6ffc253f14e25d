package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// SessionRevocationSpec says which Supervisor sessions to end. A session matches when it belongs
// to the FederationDomain named (any, when unset), began before startedBefore, and is of one of the
// usernames or has one of the groups; with neither usernames nor groups, every session of the
// FederationDomain that began before startedBefore matches. Usernames and groups are those the
// Supervisor gives its clients: after the FederationDomain's identity transformations.
type SessionRevocationSpec struct {
	// FederationDomainName limits the revocation to the sessions of the FederationDomain of this
	// name in the same namespace. Unset, sessions of every FederationDomain match.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=253
	FederationDomainName string `json:"federationDomainName,omitempty"`

	// Usernames are the usernames whose sessions end.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MinLength=1
	Usernames []string `json:"usernames,omitempty"`

	// Groups end the sessions of every user in one of them.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MinLength=1
	Groups []string `json:"groups,omitempty"`

	// StartedBefore ends only the sessions whose login was before this time, so that a user can
	// log in again at once (when the identity provider still allows it). Unset, the object's
	// creation time.
	//
	// +optional
	StartedBefore *metav1.Time `json:"startedBefore,omitempty"`

	// Reason is why the sessions end, for the audit log.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`
}

// SessionRevocationStatus is what the Supervisor did about a SessionRevocation.
type SessionRevocationStatus struct {
	// Phase summarizes the conditions.
	//
	// +optional
	// +kubebuilder:default=Pending
	Phase Phase `json:"phase,omitempty"`

	// Conditions are the results of the revocation, keyed by type: FederationDomainFound (when
	// spec.federationDomainName is set) and SessionsRevoked.
	//
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// RevokedSessions counts the sessions this object ended: their tokens deleted and, where the
	// identity provider allows it, their upstream refresh tokens revoked.
	//
	// +optional
	RevokedSessions int64 `json:"revokedSessions"`
}

// SessionRevocation ends Supervisor sessions: those it matches can neither refresh nor exchange
// tokens from the moment it exists (each Supervisor replica checks it at every request), and the
// Supervisor then deletes their tokens and revokes their upstream refresh tokens. It keeps
// refusing the sessions it matches for as long as it exists; once status.revokedSessions is
// counted it may be deleted. An addition to Pinniped's API.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:categories=pinniped
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Federation Domain",type=string,JSONPath=`.spec.federationDomainName`
// +kubebuilder:printcolumn:name="Revoked Sessions",type=integer,JSONPath=`.status.revokedSessions`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SessionRevocation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which sessions end.
	Spec SessionRevocationSpec `json:"spec"`

	// Status is what the Supervisor did, written by the Supervisor.
	//
	// +optional
	Status SessionRevocationStatus `json:"status,omitempty"`
}

// SessionRevocationList is a list of SessionRevocations.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type SessionRevocationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the SessionRevocations.
	Items []SessionRevocation `json:"items"`
}
