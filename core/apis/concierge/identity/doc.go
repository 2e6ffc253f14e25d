// Package identity holds the internal (hub) version of the identity.concierge.pinniped.dev API
// group, which the Concierge's aggregated API server works with. Clients use the v1alpha1 package.
//
// +k8s:deepcopy-gen=package
// +groupName=identity.concierge.pinniped.dev
package identity
