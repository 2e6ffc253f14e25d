package v1alpha1

// SessionLifetimes bounds the Supervisor sessions of a FederationDomain, or of one OIDCClient
// (whose values only ever shorten its FederationDomain's). A session is what a login starts and
// refreshes continue; when it ends, its refresh token and token exchanges are refused and the
// user logs in again. An addition to Pinniped's API, where sessions last a fixed nine hours.
type SessionLifetimes struct {
	// MaxSessionSeconds is how long a session may last from the login, however often it is
	// refreshed: 60 to 604800 (a week). Unset, 32400 (nine hours, Pinniped's fixed length).
	//
	// +optional
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=604800
	MaxSessionSeconds *int32 `json:"maxSessionSeconds,omitempty"`

	// IdleTimeoutSeconds ends a session that was not refreshed for this long: 60 to 604800, and
	// at most maxSessionSeconds. Clients refresh every few minutes while in use (the pinniped
	// CLI whenever kubectl needs a new cluster credential). Unset, sessions have no idle timeout.
	//
	// +optional
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=604800
	IdleTimeoutSeconds *int32 `json:"idleTimeoutSeconds,omitempty"`
}
