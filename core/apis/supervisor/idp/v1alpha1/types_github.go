package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// GitHubUsernameAttribute says which GitHub user attributes form the username.
//
// +kubebuilder:validation:Enum=id;login;"login:id"
type GitHubUsernameAttribute string

const (
	// GitHubUsernameID uses the numeric user ID, which never changes.
	GitHubUsernameID GitHubUsernameAttribute = "id"
	// GitHubUsernameLogin uses the login name, which users can change.
	GitHubUsernameLogin GitHubUsernameAttribute = "login"
	// GitHubUsernameLoginAndID uses "<login>:<id>": readable and unique.
	GitHubUsernameLoginAndID GitHubUsernameAttribute = "login:id"
)

// GitHubGroupNameAttribute says which team attribute forms group names, which are
// "<organization login>/<team attribute>".
//
// +kubebuilder:validation:Enum=name;slug
type GitHubGroupNameAttribute string

const (
	// GitHubGroupNameName uses the team's display name.
	GitHubGroupNameName GitHubGroupNameAttribute = "name"
	// GitHubGroupNameSlug uses the team's slug.
	GitHubGroupNameSlug GitHubGroupNameAttribute = "slug"
)

// GitHubAllowedAuthOrganizationsPolicy says which GitHub users may log in.
//
// +kubebuilder:validation:Enum=OnlyUsersFromAllowedOrganizations;AllGitHubUsers
type GitHubAllowedAuthOrganizationsPolicy string

const (
	// GitHubAllowedAuthOrganizationsPolicyOnlyUsersFromAllowedOrganizations admits only members
	// of the allowed organizations.
	GitHubAllowedAuthOrganizationsPolicyOnlyUsersFromAllowedOrganizations GitHubAllowedAuthOrganizationsPolicy = "OnlyUsersFromAllowedOrganizations"
	// GitHubAllowedAuthOrganizationsPolicyAllGitHubUsers admits every GitHub user.
	GitHubAllowedAuthOrganizationsPolicyAllGitHubUsers GitHubAllowedAuthOrganizationsPolicy = "AllGitHubUsers"
)

// GitHubIdentityProviderSpec configures GitHub or GitHub Enterprise Server as an upstream.
type GitHubIdentityProviderSpec struct {
	// GitHubAPI says where the GitHub API is.
	//
	// +optional
	// +kubebuilder:default={}
	GitHubAPI GitHubAPIConfig `json:"githubAPI,omitempty"`

	// Claims says how usernames and group names are formed.
	//
	// +optional
	// +kubebuilder:default={}
	Claims GitHubClaims `json:"claims,omitempty"`

	// AllowAuthentication says which GitHub users may log in.
	AllowAuthentication GitHubAllowAuthenticationSpec `json:"allowAuthentication"`

	// Client names the Secret with the credentials of the GitHub App or OAuth App.
	Client GitHubClientSpec `json:"client"`
}

// GitHubAPIConfig says where the GitHub API is.
type GitHubAPIConfig struct {
	// Host is "github.com" (the same as "api.github.com") or the host[:port] of a GitHub
	// Enterprise Server; always reached over https.
	//
	// +optional
	// +kubebuilder:default="github.com"
	// +kubebuilder:validation:MinLength=1
	Host *string `json:"host,omitempty"`

	// TLS configures how to verify the API's serving certificate.
	//
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`
}

// GitHubClaims says how usernames and group names are formed.
type GitHubClaims struct {
	// Username says which user attributes form the username.
	//
	// +optional
	// +kubebuilder:default="login:id"
	Username *GitHubUsernameAttribute `json:"username,omitempty"`

	// Groups says which team attribute forms group names.
	//
	// +optional
	// +kubebuilder:default=slug
	Groups *GitHubGroupNameAttribute `json:"groups,omitempty"`
}

// GitHubAllowAuthenticationSpec says which GitHub users may log in.
type GitHubAllowAuthenticationSpec struct {
	// Organizations restricts login by organization membership.
	Organizations GitHubOrganizationsSpec `json:"organizations"`
}

// GitHubOrganizationsSpec restricts login, and the teams turned into groups, by organization.
//
// The rules and their messages are upstream's, which operators' scripts compare; policy always has
// a value when they run, as defaulting comes first.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.allowed) && size(self.allowed) > 0 && self.policy == 'AllGitHubUsers')",message="spec.allowAuthentication.organizations.policy must be 'OnlyUsersFromAllowedOrganizations' when spec.allowAuthentication.organizations.allowed has organizations listed"
// +kubebuilder:validation:XValidation:rule="!((!has(self.allowed) || size(self.allowed) == 0) && self.policy == 'OnlyUsersFromAllowedOrganizations')",message="spec.allowAuthentication.organizations.policy must be 'AllGitHubUsers' when spec.allowAuthentication.organizations.allowed is empty"
type GitHubOrganizationsSpec struct {
	// Policy says whether only members of the allowed organizations may log in.
	//
	// +optional
	// +kubebuilder:default=OnlyUsersFromAllowedOrganizations
	Policy *GitHubAllowedAuthOrganizationsPolicy `json:"policy,omitempty"`

	// Allowed are the logins of the organizations whose members may log in. Only teams of these
	// organizations become groups; with no organizations, teams of every organization do.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	Allowed []string `json:"allowed,omitempty"`
}

// GitHubClientSpec names the Secret with the credentials of a GitHub App or OAuth App.
type GitHubClientSpec struct {
	// SecretName is a Secret of type secrets.pinniped.dev/github-client in the Supervisor's
	// namespace with the keys clientID and clientSecret.
	//
	// +kubebuilder:validation:MinLength=1
	SecretName string `json:"secretName"`
}

// GitHubIdentityProvider configures GitHub or GitHub Enterprise Server as an upstream identity
// provider of the Supervisor; users log in through the browser only.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:categories=pinniped;pinniped-idp;pinniped-idps
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Host",type=string,JSONPath=`.spec.githubAPI.host`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GitHubIdentityProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired configuration.
	Spec GitHubIdentityProviderSpec `json:"spec"`

	// Status is the observed state, written by the Supervisor.
	//
	// +optional
	Status IdentityProviderStatus `json:"status,omitempty"`
}

// GitHubIdentityProviderList is a list of GitHubIdentityProviders.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type GitHubIdentityProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the GitHubIdentityProviders.
	Items []GitHubIdentityProvider `json:"items"`
}
