// Package core holds only what two or more of the servers, the CLI and the test harness share:
// API types and generated clients, the API group suffix, certificate authorities, CA bundles,
// serving certificates, the controller loop and shared test harnesses. Code that one server runs
// lives under that server; layering_test.go keeps it so.
package core
