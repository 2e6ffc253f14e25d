// Package v1alpha1 holds the v1alpha1 types of the idp.supervisor.pinniped.dev API group: the
// custom resources that configure the upstream identity providers of the Supervisor
// (OIDCIdentityProvider, LDAPIdentityProvider, ActiveDirectoryIdentityProvider and
// GitHubIdentityProvider).
//
// +k8s:deepcopy-gen=package
// +groupName=idp.supervisor.pinniped.dev
package v1alpha1
