// Package integration tests the Supervisor against a real etcd and kube-apiserver: its CRDs, the
// FederationDomain and upstream identity provider controllers, the endpoints it serves over HTTPS
// with certificates chosen by SNI (discovery, JWKS, the authorize endpoint), and its
// OIDCClientSecretRequest API through the aggregation layer. The Supervisor runs as its built
// binary, as in a cluster, acting as its ServiceAccount so that the install's RBAC is proven too.
// The tests skip under -short.
package integration
