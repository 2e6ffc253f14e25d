package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ActiveDirectoryIdentityProviderSpec configures an upstream Active Directory domain. Every
// search setting has an Active Directory default, so often only Host and Bind are needed.
type ActiveDirectoryIdentityProviderSpec struct {
	// Host is the host[:port] of a domain controller. LDAPS (default port 636) is tried first,
	// then StartTLS (default port 389).
	//
	// +kubebuilder:validation:MinLength=1
	Host string `json:"host"`

	// TLS configures how to verify the domain controller's certificate.
	//
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`

	// Bind names the Secret with the account the Supervisor binds as to search. Optional in the
	// API, as upstream's is; without it the BindSecretValid condition reports the missing Secret.
	//
	// +optional
	Bind ActiveDirectoryIdentityProviderBind `json:"bind,omitempty"`

	// UserSearch configures how users are found.
	//
	// +optional
	UserSearch ActiveDirectoryIdentityProviderUserSearch `json:"userSearch,omitempty"`

	// GroupSearch configures how a user's groups are found.
	//
	// +optional
	GroupSearch ActiveDirectoryIdentityProviderGroupSearch `json:"groupSearch,omitempty"`
}

// ActiveDirectoryIdentityProviderBind names the bind account Secret.
type ActiveDirectoryIdentityProviderBind struct {
	// SecretName is a Secret of type kubernetes.io/basic-auth in the Supervisor's namespace; its
	// username is the bind account (DN or userPrincipalName) and its password the bind password.
	//
	// +kubebuilder:validation:MinLength=1
	SecretName string `json:"secretName"`
}

// ActiveDirectoryIdentityProviderUserSearch configures how users are found.
type ActiveDirectoryIdentityProviderUserSearch struct {
	// Base is the DN below which users are searched; the domain's defaultNamingContext when empty.
	//
	// +optional
	Base string `json:"base,omitempty"`

	// Filter selects the user entry; "{}" is replaced by the escaped login name. When empty, it
	// matches people (not computers) by sAMAccountName, mail or userPrincipalName.
	//
	// +optional
	Filter string `json:"filter,omitempty"`

	// Attributes names the attributes that give the username and UID.
	//
	// +optional
	Attributes ActiveDirectoryIdentityProviderUserSearchAttributes `json:"attributes,omitempty"`
}

// ActiveDirectoryIdentityProviderUserSearchAttributes names the user entry attributes that
// identify a user.
type ActiveDirectoryIdentityProviderUserSearchAttributes struct {
	// Username is the attribute whose value becomes the username; userPrincipalName when empty.
	//
	// +optional
	Username string `json:"username,omitempty"`

	// UID is the attribute whose value uniquely and permanently identifies the user; objectGUID
	// when empty.
	//
	// +optional
	UID string `json:"uid,omitempty"`
}

// ActiveDirectoryIdentityProviderGroupSearch configures how a user's groups are found.
type ActiveDirectoryIdentityProviderGroupSearch struct {
	// Base is the DN below which groups are searched; the domain's defaultNamingContext when empty.
	//
	// +optional
	Base string `json:"base,omitempty"`

	// Filter selects the user's group entries; "{}" is replaced by the user's
	// UserAttributeForFilter value. When empty, it finds the groups the user is a member of,
	// directly or through nested groups.
	//
	// +optional
	Filter string `json:"filter,omitempty"`

	// UserAttributeForFilter is the user entry attribute substituted into Filter; "dn" when empty.
	//
	// +optional
	UserAttributeForFilter string `json:"userAttributeForFilter,omitempty"`

	// Attributes names the attribute that gives the group names.
	//
	// +optional
	Attributes ActiveDirectoryIdentityProviderGroupSearchAttributes `json:"attributes,omitempty"`

	// SkipGroupRefresh keeps the groups found at login until the next login instead of searching
	// again at every refresh, for domains where nested group searches are expensive.
	//
	// +optional
	SkipGroupRefresh bool `json:"skipGroupRefresh,omitempty"`
}

// ActiveDirectoryIdentityProviderGroupSearchAttributes names the group entry attribute that
// names a group.
type ActiveDirectoryIdentityProviderGroupSearchAttributes struct {
	// GroupName is the attribute whose value becomes the group name. When empty, the group name
	// is "<sAMAccountName>@<domain>", with the domain taken from the group's DN.
	//
	// +optional
	GroupName string `json:"groupName,omitempty"`
}

// ActiveDirectoryIdentityProvider configures an upstream Active Directory domain for the
// Supervisor.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:categories=pinniped;pinniped-idp;pinniped-idps
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Host",type=string,JSONPath=`.spec.host`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ActiveDirectoryIdentityProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired configuration.
	Spec ActiveDirectoryIdentityProviderSpec `json:"spec"`

	// Status is the observed state, written by the Supervisor.
	//
	// +optional
	Status IdentityProviderStatus `json:"status,omitempty"`
}

// ActiveDirectoryIdentityProviderList is a list of ActiveDirectoryIdentityProviders.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ActiveDirectoryIdentityProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the ActiveDirectoryIdentityProviders.
	Items []ActiveDirectoryIdentityProvider `json:"items"`
}
