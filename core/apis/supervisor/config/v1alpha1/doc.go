// Package v1alpha1 holds the v1alpha1 types of the config.supervisor.pinniped.dev API group: the
// FederationDomain custom resource, which configures one OIDC issuer of the Supervisor and the
// identity providers behind it, and the OIDCClient custom resource, which registers a
// confidential OAuth client of the Supervisor.
//
// +k8s:deepcopy-gen=package
// +groupName=config.supervisor.pinniped.dev
package v1alpha1
