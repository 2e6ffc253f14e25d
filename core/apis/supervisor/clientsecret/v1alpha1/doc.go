// Package v1alpha1 holds the v1alpha1 types of the clientsecret.supervisor.pinniped.dev API
// group: the OIDCClientSecretRequest, which the Supervisor's aggregated API server answers by
// generating or revoking the client secrets of an OIDCClient.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=sealion.dev/core/apis/supervisor/clientsecret
// +k8s:openapi-gen=true
// The OpenAPI models are named as upstream Pinniped's are (kubectl explain and validation
// errors print them):
// +k8s:openapi-model-package=dev.pinniped.apis.supervisor.clientsecret.v1alpha1
// +groupName=clientsecret.supervisor.pinniped.dev
package v1alpha1
