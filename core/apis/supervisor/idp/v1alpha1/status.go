package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// IdentityProviderStatus is the observed state of an identity provider; every kind in this group
// reports the same shape.
type IdentityProviderStatus struct {
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
}

// IdentityProviderStatus lets code that handles every kind alike (the Supervisor's status
// controller) read and write the status without knowing the kind.
func (p *OIDCIdentityProvider) IdentityProviderStatus() *IdentityProviderStatus { return &p.Status }

// IdentityProviderStatus: see OIDCIdentityProvider.IdentityProviderStatus.
func (p *LDAPIdentityProvider) IdentityProviderStatus() *IdentityProviderStatus { return &p.Status }

// IdentityProviderStatus: see OIDCIdentityProvider.IdentityProviderStatus.
func (p *ActiveDirectoryIdentityProvider) IdentityProviderStatus() *IdentityProviderStatus {
	return &p.Status
}

// IdentityProviderStatus: see OIDCIdentityProvider.IdentityProviderStatus.
func (p *GitHubIdentityProvider) IdentityProviderStatus() *IdentityProviderStatus { return &p.Status }
