// Package steps holds the reusable parts of our end-to-end suites, as e2e-framework environment
// functions: create a cluster with a provider, load our images, install the servers from their
// manifests, wait until they serve, collect logs and tear down. Values pass between steps in the
// context (ClusterFrom) and in the envconf.Config (the kubeconfig).
package steps
