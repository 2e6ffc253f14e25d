package v1alpha1

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WhoAmIRequestSpec is empty: the request is about its sender.
type WhoAmIRequestSpec struct{}

// WhoAmIRequestStatus describes the sender of the request.
type WhoAmIRequestStatus struct {
	// KubernetesUserInfo is the identity of the sender as the cluster sees it.
	KubernetesUserInfo KubernetesUserInfo `json:"kubernetesUserInfo"`
}

// KubernetesUserInfo is an authenticated user and the audiences of its credential.
type KubernetesUserInfo struct {
	// User is the authenticated user.
	User UserInfo `json:"user"`

	// Audiences are the audiences the credential was valid for, when the authenticator knows them.
	//
	// +optional
	// +listType=atomic
	Audiences []string `json:"audiences,omitempty"`
}

// UserInfo is the identity of an authenticated user, as in authentication.k8s.io.
type UserInfo struct {
	// Username uniquely identifies the user.
	Username string `json:"username"`

	// UID identifies the user across name changes, when the authenticator provides it.
	//
	// +optional
	UID string `json:"uid,omitempty"`

	// Groups are the groups the user belongs to.
	//
	// +optional
	// +listType=atomic
	Groups []string `json:"groups,omitempty"`

	// Extra holds further attributes provided by the authenticator.
	//
	// +optional
	Extra map[string]ExtraValue `json:"extra,omitempty"`
}

// ExtraValue is the list of values of one extra attribute. It is a named type so that the
// generators treat the map value as a list.
type ExtraValue []string

// String formats the values like a Go slice.
func (t ExtraValue) String() string {
	return fmt.Sprintf("%v", []string(t))
}

// WhoAmIRequest asks the Concierge who the sender is. It is served by the Concierge (create; list answers an empty list)
// and never stored.
//
// +genclient
// +genclient:nonNamespaced
// +genclient:onlyVerbs=create
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type WhoAmIRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is empty.
	Spec WhoAmIRequestSpec `json:"spec,omitempty"`

	// Status describes the sender.
	Status WhoAmIRequestStatus `json:"status,omitempty"`
}

// WhoAmIRequestList is a list of WhoAmIRequests.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type WhoAmIRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the WhoAmIRequests.
	Items []WhoAmIRequest `json:"items"`
}
