// Package integration tests the Supervisor against a real etcd and kube-apiserver: its CRDs, the
// FederationDomain controller (conditions, key Secrets) and the endpoints it serves over HTTPS with
// certificates chosen by SNI. The Supervisor runs as its built binary, as in a cluster. The tests
// skip under -short.
package integration
