// Package v1alpha1 holds the v1alpha1 types of the login.concierge.pinniped.dev API group: the
// TokenCredentialRequest, which the Concierge's aggregated API server answers with a short-lived
// client certificate for the cluster.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=sealion.dev/core/apis/concierge/login
// +k8s:openapi-gen=true
// The OpenAPI models are named as upstream Pinniped's are (kubectl explain and validation
// errors print them):
// +k8s:openapi-model-package=dev.pinniped.apis.concierge.login.v1alpha1
// +groupName=login.concierge.pinniped.dev
package v1alpha1
