// Package conformance holds the end-to-end suites of one cluster: a real cluster from a provider
// (SEALION_E2E_PROVIDER), our image loaded into it, the Concierge and local-user-authenticator
// installed from their manifests, and everything checked through the real kubectl and pinniped
// CLI: the Concierge's strategies and every way to log in, including through a Supervisor that
// the tests needing it install on the same cluster (federation_test.go). In installed mode
// (SEALION_E2E_INSTALLED=true, on the existing provider) the suites test the Concierge and
// Supervisor a user installed instead, as found (underTest), changing nothing of theirs: the
// tests that would skip (skipIfInstalled).
package conformance
