package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// LDAPIdentityProviderSpec configures an upstream LDAP server.
type LDAPIdentityProviderSpec struct {
	// Host is the host[:port] of the server. LDAPS (default port 636) is tried first, then
	// StartTLS (default port 389).
	//
	// +kubebuilder:validation:MinLength=1
	Host string `json:"host"`

	// TLS configures how to verify the server's certificate.
	//
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`

	// Bind names the Secret with the account the Supervisor binds as to search. Optional in the
	// API, as upstream's is; without it the BindSecretValid condition reports the missing Secret.
	//
	// +optional
	Bind LDAPIdentityProviderBind `json:"bind,omitempty"`

	// UserSearch configures how users are found.
	//
	// +optional
	UserSearch LDAPIdentityProviderUserSearch `json:"userSearch,omitempty"`

	// GroupSearch configures how a user's groups are found.
	//
	// +optional
	GroupSearch LDAPIdentityProviderGroupSearch `json:"groupSearch,omitempty"`
}

// LDAPIdentityProviderBind names the bind account Secret.
type LDAPIdentityProviderBind struct {
	// SecretName is a Secret of type kubernetes.io/basic-auth in the Supervisor's namespace; its
	// username is the bind DN and its password the bind password.
	//
	// +kubebuilder:validation:MinLength=1
	SecretName string `json:"secretName"`
}

// LDAPIdentityProviderUserSearch configures how users are found.
type LDAPIdentityProviderUserSearch struct {
	// Base is the DN below which users are searched.
	//
	// +kubebuilder:validation:MinLength=1
	// +optional
	Base string `json:"base,omitempty"`

	// Filter selects the user entry; "{}" is replaced by the escaped login name. When empty, it is
	// "<attributes.username>={}".
	//
	// +optional
	Filter string `json:"filter,omitempty"`

	// Attributes names the attributes that give the username and UID.
	//
	// +optional
	Attributes LDAPIdentityProviderUserSearchAttributes `json:"attributes,omitempty"`
}

// LDAPIdentityProviderUserSearchAttributes names the user entry attributes that identify a user.
type LDAPIdentityProviderUserSearchAttributes struct {
	// Username is the attribute whose value becomes the username; "dn" uses the entry's DN.
	//
	// +kubebuilder:validation:MinLength=1
	// +optional
	Username string `json:"username,omitempty"`

	// UID is the attribute whose value uniquely and permanently identifies the user; "dn" uses
	// the entry's DN.
	//
	// +kubebuilder:validation:MinLength=1
	// +optional
	UID string `json:"uid,omitempty"`
}

// LDAPIdentityProviderGroupSearch configures how a user's groups are found.
type LDAPIdentityProviderGroupSearch struct {
	// Base is the DN below which groups are searched; no group search when empty.
	//
	// +optional
	Base string `json:"base,omitempty"`

	// Filter selects the user's group entries; "{}" is replaced by the user's
	// UserAttributeForFilter value. "member={}" when empty.
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
	Attributes LDAPIdentityProviderGroupSearchAttributes `json:"attributes,omitempty"`

	// SkipGroupRefresh keeps the groups found at login until the next login instead of searching
	// again at every refresh, for servers where group searches are expensive.
	//
	// +optional
	SkipGroupRefresh bool `json:"skipGroupRefresh,omitempty"`
}

// LDAPIdentityProviderGroupSearchAttributes names the group entry attribute that names a group.
type LDAPIdentityProviderGroupSearchAttributes struct {
	// GroupName is the attribute whose value becomes the group name; "dn" when empty.
	//
	// +optional
	GroupName string `json:"groupName,omitempty"`
}

// LDAPIdentityProvider configures an upstream LDAP server for the Supervisor.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:categories=pinniped;pinniped-idp;pinniped-idps
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Host",type=string,JSONPath=`.spec.host`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type LDAPIdentityProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired configuration.
	Spec LDAPIdentityProviderSpec `json:"spec"`

	// Status is the observed state, written by the Supervisor.
	//
	// +optional
	Status IdentityProviderStatus `json:"status,omitempty"`
}

// LDAPIdentityProviderList is a list of LDAPIdentityProviders.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type LDAPIdentityProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the LDAPIdentityProviders.
	Items []LDAPIdentityProvider `json:"items"`
}
