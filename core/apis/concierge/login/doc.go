// Package login holds the internal (hub) version of the login.concierge.pinniped.dev API group,
// which the Concierge's aggregated API server works with. Clients use the v1alpha1 package.
//
// +k8s:deepcopy-gen=package
// +groupName=login.concierge.pinniped.dev
package login
