// Package v1alpha1 holds the v1alpha1 types of the authentication.concierge.pinniped.dev API
// group: the JWTAuthenticator and WebhookAuthenticator custom resources that tell the Concierge
// how to validate the tokens it receives in TokenCredentialRequests.
//
// +k8s:deepcopy-gen=package
// +groupName=authentication.concierge.pinniped.dev
package v1alpha1
