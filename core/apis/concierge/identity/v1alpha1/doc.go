// Package v1alpha1 holds the v1alpha1 types of the identity.concierge.pinniped.dev API group: the
// WhoAmIRequest, which the Concierge's aggregated API server answers with the sender's identity.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=sealion.dev/core/apis/concierge/identity
// +k8s:openapi-gen=true
// The OpenAPI models are named as upstream Pinniped's are (kubectl explain and validation
// errors print them):
// +k8s:openapi-model-package=dev.pinniped.apis.concierge.identity.v1alpha1
// +groupName=identity.concierge.pinniped.dev
package v1alpha1
