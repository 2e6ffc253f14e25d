package v1alpha1

// CertificateAuthorityDataSourceKind names the kind of object that holds a CA bundle.
//
// +kubebuilder:validation:Enum=Secret;ConfigMap
type CertificateAuthorityDataSourceKind string

const (
	// CertificateAuthorityDataSourceKindSecret reads the CA bundle from a Secret of type
	// kubernetes.io/tls or Opaque.
	CertificateAuthorityDataSourceKindSecret CertificateAuthorityDataSourceKind = "Secret"
	// CertificateAuthorityDataSourceKindConfigMap reads the CA bundle from a ConfigMap.
	CertificateAuthorityDataSourceKindConfigMap CertificateAuthorityDataSourceKind = "ConfigMap"
)

// TLSSpec configures how to verify the serving certificate of a remote server. Setting both
// fields is accepted by the API, as upstream's is, and refused by the controller in the
// TLSConfigurationValid condition instead (see core/cabundle).
type TLSSpec struct {
	// CertificateAuthorityData is a base64-encoded PEM bundle of trusted CA certificates. When
	// neither this nor CertificateAuthorityDataSource is set, the system trust store is used.
	//
	// +optional
	CertificateAuthorityData string `json:"certificateAuthorityData,omitempty"`

	// CertificateAuthorityDataSource names a Secret or ConfigMap in the Supervisor's namespace whose
	// key holds a PEM bundle of trusted CA certificates. Changes to that object are picked up
	// without restarting.
	//
	// +optional
	CertificateAuthorityDataSource *CertificateAuthorityDataSourceSpec `json:"certificateAuthorityDataSource,omitempty"`
}

// CertificateAuthorityDataSourceSpec points at one key of a Secret or ConfigMap that holds a PEM
// CA bundle.
type CertificateAuthorityDataSourceSpec struct {
	// Kind is the kind of the object: Secret or ConfigMap.
	Kind CertificateAuthorityDataSourceKind `json:"kind"`

	// Name is the name of the object, in the same namespace as the Supervisor.
	//
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Key is the key in the object's data that holds the PEM bundle.
	//
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key"`
}
