package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ImpersonationProxyMode says whether the impersonation proxy runs.
//
// +kubebuilder:validation:Enum=auto;enabled;disabled
type ImpersonationProxyMode string

const (
	// ImpersonationProxyModeDisabled never runs the impersonation proxy.
	ImpersonationProxyModeDisabled ImpersonationProxyMode = "disabled"
	// ImpersonationProxyModeEnabled always runs the impersonation proxy.
	ImpersonationProxyModeEnabled ImpersonationProxyMode = "enabled"
	// ImpersonationProxyModeAuto runs the impersonation proxy only when the cluster shows no
	// control-plane nodes, as on managed clusters whose signing key is out of reach.
	ImpersonationProxyModeAuto ImpersonationProxyMode = "auto"
)

// ImpersonationProxyServiceType is the kind of Service that exposes the impersonation proxy.
//
// +kubebuilder:validation:Enum=LoadBalancer;ClusterIP;None
type ImpersonationProxyServiceType string

const (
	// ImpersonationProxyServiceTypeLoadBalancer exposes the proxy through a LoadBalancer Service.
	ImpersonationProxyServiceTypeLoadBalancer ImpersonationProxyServiceType = "LoadBalancer"
	// ImpersonationProxyServiceTypeClusterIP exposes the proxy through a ClusterIP Service.
	ImpersonationProxyServiceTypeClusterIP ImpersonationProxyServiceType = "ClusterIP"
	// ImpersonationProxyServiceTypeNone creates no Service; spec.impersonationProxy.externalEndpoint
	// must then say how clients reach the proxy.
	ImpersonationProxyServiceTypeNone ImpersonationProxyServiceType = "None"
)

// StrategyType names a way the Concierge can issue cluster credentials.
//
// +kubebuilder:validation:Enum=KubeClusterSigningCertificate;ImpersonationProxy;CertificateSigningRequest
type StrategyType string

const (
	// StrategyTypeKubeClusterSigningCertificate signs client certificates with the cluster's own
	// signing key, fetched by the kube-cert-agent.
	StrategyTypeKubeClusterSigningCertificate StrategyType = "KubeClusterSigningCertificate"
	// StrategyTypeImpersonationProxy issues certificates that are valid only at the impersonation
	// proxy, which forwards requests with impersonation headers.
	StrategyTypeImpersonationProxy StrategyType = "ImpersonationProxy"
	// StrategyTypeCertificateSigningRequest has the cluster's kubernetes.io/kube-apiserver-client
	// signer issue each client certificate through the CertificateSigningRequest API: no pod reads
	// the signing key, and the certificates live ten minutes, the API's shortest. An addition to
	// Pinniped's API.
	StrategyTypeCertificateSigningRequest StrategyType = "CertificateSigningRequest"
)

// StrategyStatus says whether a strategy works.
//
// +kubebuilder:validation:Enum=Success;Error
type StrategyStatus string

const (
	// StrategyStatusSuccess means the strategy can issue credentials.
	StrategyStatusSuccess StrategyStatus = "Success"
	// StrategyStatusError means the strategy cannot issue credentials.
	StrategyStatusError StrategyStatus = "Error"
)

// StrategyReason explains a strategy's status.
//
// +kubebuilder:validation:Enum=Listening;Pending;Disabled;ErrorDuringSetup;CouldNotFetchKey;CouldNotGetClusterInfo;FetchedKey;SignerAvailable;SignerNotServed;ApprovalForbidden;CertificateNotAccepted;AnonymousRequestsRefused
type StrategyReason string

const (
	// StrategyReasonListening means the impersonation proxy accepts connections.
	StrategyReasonListening StrategyReason = "Listening"
	// StrategyReasonPending means the strategy is on its way and clients should wait: the
	// impersonation proxy waits for its Service to get an address, or the kube-cert-agent's pod
	// is starting.
	StrategyReasonPending StrategyReason = "Pending"
	// StrategyReasonDisabled means the strategy is turned off: the impersonation proxy or the
	// CertificateSigningRequest strategy by its mode, the kube cert agent while the
	// CertificateSigningRequest strategy is enabled.
	StrategyReasonDisabled StrategyReason = "Disabled"
	// StrategyReasonErrorDuringSetup means the impersonation proxy failed to start.
	StrategyReasonErrorDuringSetup StrategyReason = "ErrorDuringSetup"
	// StrategyReasonCouldNotFetchKey means the cluster signing key could not be read.
	StrategyReasonCouldNotFetchKey StrategyReason = "CouldNotFetchKey"
	// StrategyReasonCouldNotGetClusterInfo means the kube-public/cluster-info ConfigMap is missing
	// or unusable.
	StrategyReasonCouldNotGetClusterInfo StrategyReason = "CouldNotGetClusterInfo"
	// StrategyReasonFetchedKey means the cluster signing key was read.
	StrategyReasonFetchedKey StrategyReason = "FetchedKey"
	// StrategyReasonSignerAvailable means the kube-apiserver-client signer issued a certificate
	// the API server accepted.
	StrategyReasonSignerAvailable StrategyReason = "SignerAvailable"
	// StrategyReasonSignerNotServed means no certificate was issued in time for an approved
	// request: no controller signs for kubernetes.io/kube-apiserver-client (as on EKS).
	StrategyReasonSignerNotServed StrategyReason = "SignerNotServed"
	// StrategyReasonApprovalForbidden means the Concierge may not approve requests for the signer.
	StrategyReasonApprovalForbidden StrategyReason = "ApprovalForbidden"
	// StrategyReasonCertificateNotAccepted means the signer issued a certificate the API server
	// refused: it signs with a CA the API server does not trust for clients.
	StrategyReasonCertificateNotAccepted StrategyReason = "CertificateNotAccepted"
	// StrategyReasonAnonymousRequestsRefused means the API server refuses TokenCredentialRequests
	// that carry no credential, as clients send them: its anonymous authentication is off (as on
	// AKS), so certificates it would accept cannot be handed out through it.
	StrategyReasonAnonymousRequestsRefused StrategyReason = "AnonymousRequestsRefused"
)

// FrontendType names the API through which clients obtain credentials.
//
// +kubebuilder:validation:Enum=TokenCredentialRequestAPI;ImpersonationProxy
type FrontendType string

const (
	// FrontendTypeTokenCredentialRequestAPI means clients post TokenCredentialRequests to the
	// cluster's API server (served through API aggregation).
	FrontendTypeTokenCredentialRequestAPI FrontendType = "TokenCredentialRequestAPI"
	// FrontendTypeImpersonationProxy means clients talk to the impersonation proxy.
	FrontendTypeImpersonationProxy FrontendType = "ImpersonationProxy"
)

// CredentialIssuerSpec is the desired configuration of the Concierge.
type CredentialIssuerSpec struct {
	// ImpersonationProxy configures the impersonation proxy.
	//
	// +optional
	ImpersonationProxy *ImpersonationProxySpec `json:"impersonationProxy,omitempty"`

	// CertificateSigningRequest configures the CertificateSigningRequest strategy. An addition to
	// Pinniped's API.
	//
	// +optional
	CertificateSigningRequest *CertificateSigningRequestSpec `json:"certificateSigningRequest,omitempty"`
}

// CertificateSigningRequestMode says whether the Concierge issues certificates through the
// CertificateSigningRequest API.
//
// +kubebuilder:validation:Enum=auto;enabled;disabled
type CertificateSigningRequestMode string

const (
	// CertificateSigningRequestModeAuto uses the strategy where neither the kube cert agent nor the
	// impersonation proxy serves, and the cluster's signer works.
	CertificateSigningRequestModeAuto CertificateSigningRequestMode = "auto"
	// CertificateSigningRequestModeEnabled uses it first, and runs no kube cert agent.
	CertificateSigningRequestModeEnabled CertificateSigningRequestMode = "enabled"
	// CertificateSigningRequestModeDisabled never uses it.
	CertificateSigningRequestModeDisabled CertificateSigningRequestMode = "disabled"
)

// CertificateSigningRequestSpec configures the CertificateSigningRequest strategy.
type CertificateSigningRequestSpec struct {
	// Mode says when the strategy is used; auto when unset.
	//
	// +optional
	// +kubebuilder:default=auto
	Mode CertificateSigningRequestMode `json:"mode,omitempty"`
}

// ImpersonationProxySpec configures the impersonation proxy.
type ImpersonationProxySpec struct {
	// Mode says whether the impersonation proxy runs.
	Mode ImpersonationProxyMode `json:"mode"`

	// Service configures the Service that exposes the proxy.
	//
	// +optional
	// +kubebuilder:default:={"type": "LoadBalancer"}
	Service ImpersonationProxyServiceSpec `json:"service,omitempty"`

	// ExternalEndpoint is the host[:port] at which clients reach the proxy. It is advertised to
	// clients and named in the generated serving certificate. Required when the service type is
	// None.
	//
	// +optional
	ExternalEndpoint string `json:"externalEndpoint,omitempty"`

	// TLS names an externally managed serving certificate for the proxy. When unset, the Concierge
	// generates its own CA and serving certificate.
	//
	// +optional
	TLS *ImpersonationProxyTLSSpec `json:"tls,omitempty"`
}

// ImpersonationProxyServiceSpec configures the Service that exposes the impersonation proxy.
type ImpersonationProxyServiceSpec struct {
	// Type is the kind of Service.
	//
	// +optional
	// +kubebuilder:default=LoadBalancer
	Type ImpersonationProxyServiceType `json:"type,omitempty"`

	// LoadBalancerIP asks a LoadBalancer Service for this IP address.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	LoadBalancerIP string `json:"loadBalancerIP,omitempty"`

	// Annotations are set on the Service, for example to tune a cloud load balancer.
	//
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ImpersonationProxyTLSSpec names an externally managed serving certificate for the
// impersonation proxy.
type ImpersonationProxyTLSSpec struct {
	// CertificateAuthorityData is the base64-encoded PEM CA bundle advertised to clients. When
	// empty, the ca.crt key of the Secret is advertised, if present.
	//
	// +optional
	CertificateAuthorityData string `json:"certificateAuthorityData,omitempty"`

	// SecretName is a Secret of type kubernetes.io/tls in the Concierge's namespace.
	//
	// +optional
	SecretName string `json:"secretName,omitempty"`
}

// CredentialIssuerStatus reports which strategies can issue credentials.
type CredentialIssuerStatus struct {
	// Strategies holds one entry per strategy the Concierge tried.
	//
	// +optional
	Strategies []CredentialIssuerStrategy `json:"strategies,omitempty"`
}

// CredentialIssuerStrategy is the state of one strategy.
type CredentialIssuerStrategy struct {
	// Type names the strategy.
	Type StrategyType `json:"type"`

	// Status says whether the strategy works.
	Status StrategyStatus `json:"status"`

	// Reason explains the status in one word.
	Reason StrategyReason `json:"reason"`

	// Message explains the status for humans.
	Message string `json:"message"`

	// LastUpdateTime is when this entry last changed.
	LastUpdateTime metav1.Time `json:"lastUpdateTime"`

	// Frontend says how clients use the strategy; set when the strategy works.
	//
	// +optional
	Frontend *CredentialIssuerFrontend `json:"frontend,omitempty"`
}

// CredentialIssuerFrontend describes how clients obtain credentials from a strategy.
type CredentialIssuerFrontend struct {
	// Type names the frontend.
	Type FrontendType `json:"type"`

	// TokenCredentialRequestAPIInfo is set when Type is TokenCredentialRequestAPI.
	//
	// +optional
	TokenCredentialRequestAPIInfo *TokenCredentialRequestAPIInfo `json:"tokenCredentialRequestInfo,omitempty"`

	// ImpersonationProxyInfo is set when Type is ImpersonationProxy.
	//
	// +optional
	ImpersonationProxyInfo *ImpersonationProxyInfo `json:"impersonationProxyInfo,omitempty"`
}

// TokenCredentialRequestAPIInfo says where to send TokenCredentialRequests.
type TokenCredentialRequestAPIInfo struct {
	// Server is the URL of the cluster's API server.
	//
	// +kubebuilder:validation:Pattern=`^https?://`
	Server string `json:"server"`

	// CertificateAuthorityData is the base64-encoded PEM CA bundle of the API server.
	//
	// +kubebuilder:validation:MinLength=1
	CertificateAuthorityData string `json:"certificateAuthorityData"`
}

// ImpersonationProxyInfo says where the impersonation proxy listens.
type ImpersonationProxyInfo struct {
	// Endpoint is the https URL of the proxy.
	//
	// +kubebuilder:validation:Pattern=`^https://`
	Endpoint string `json:"endpoint"`

	// CertificateAuthorityData is the base64-encoded PEM CA bundle of the proxy.
	//
	// +kubebuilder:validation:MinLength=1
	CertificateAuthorityData string `json:"certificateAuthorityData"`
}

// CredentialIssuer configures the Concierge's impersonation proxy and reports how clients can
// obtain cluster credentials. The install creates a single instance.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:scope=Cluster,categories=pinniped
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="ProxyMode",type=string,JSONPath=`.spec.impersonationProxy.mode`
// +kubebuilder:printcolumn:name="DefaultStrategy",type=string,JSONPath=`.status.strategies[?(@.status == "Success")].type`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CredentialIssuer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired configuration.
	Spec CredentialIssuerSpec `json:"spec"`

	// Status is the observed state, written by the Concierge.
	//
	// +optional
	Status CredentialIssuerStatus `json:"status,omitempty"`
}

// CredentialIssuerList is a list of CredentialIssuers.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type CredentialIssuerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the CredentialIssuers.
	Items []CredentialIssuer `json:"items"`
}
