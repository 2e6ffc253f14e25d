// Package integration tests the Concierge against a real etcd and kube-apiserver: the CRDs, the
// authenticator controllers, and TokenCredentialRequest through the real aggregation layer, with the
// issued certificates checked by the kube-apiserver itself. The servers run as built binaries, as in
// a cluster. The tests skip under -short.
package integration
