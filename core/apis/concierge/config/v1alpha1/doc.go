// Package v1alpha1 holds the v1alpha1 types of the config.concierge.pinniped.dev API group: the
// CredentialIssuer custom resource, which configures the impersonation proxy and reports which
// strategies the Concierge can use to issue cluster credentials.
//
// +k8s:deepcopy-gen=package
// +groupName=config.concierge.pinniped.dev
package v1alpha1
