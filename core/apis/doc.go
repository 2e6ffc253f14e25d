// Package apis holds the Kubernetes API types of every Pinniped-compatible API group, one folder
// per component (concierge, supervisor) and group. CRD-backed groups have only a v1alpha1 package;
// groups served by an aggregated API server also have an internal hub package and an install
// package that registers both into a scheme.
//
// The group names in these packages use the default suffix "pinniped.dev"; servers started with
// another suffix rename the groups at their edge.
package apis
