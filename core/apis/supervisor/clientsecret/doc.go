// Package clientsecret holds the internal (hub) version of the
// clientsecret.supervisor.pinniped.dev API group, which the Supervisor's aggregated API server
// works with. Clients use the v1alpha1 package.
//
// +k8s:deepcopy-gen=package
// +groupName=clientsecret.supervisor.pinniped.dev
package clientsecret
