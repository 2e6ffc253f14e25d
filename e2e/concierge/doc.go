// Package concierge holds the Concierge's end-to-end suites: a real cluster from a provider
// (SEALION_E2E_PROVIDER), our image loaded into it, the Concierge and local-user-authenticator
// installed from their manifests, and everything checked through the real kubectl.
package concierge
