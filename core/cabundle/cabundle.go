// Package cabundle resolves the CA bundle an object's TLS spec asks for: inline base64 PEM, or a key
// of a Secret or ConfigMap in the server's own namespace. The result is either a bundle (nil meaning
// "use the system roots") or a reason and message for the TLSConfigurationValid condition.
package cabundle

import (
	"crypto/x509"
	"encoding/base64"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1listers "k8s.io/client-go/listers/core/v1"
)

// Source names a key of a Secret or ConfigMap.
type Source struct {
	Kind string // "Secret" or "ConfigMap"
	Name string
	Key  string
}

// Listers read Secrets and ConfigMaps of one namespace.
type Listers struct {
	Namespace  string
	Secrets    corev1listers.SecretLister
	ConfigMaps corev1listers.ConfigMapLister
}

// Error explains why a TLS spec is unusable, in the terms of a status condition.
type Error struct {
	Reason  string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Reasons for a false TLSConfigurationValid condition.
const (
	ReasonInvalidTLSConfig = "InvalidTLSConfig"
)

// Resolve returns the PEM bundle for an inline base64 value or a source (at most one is set).
// Both empty means the system roots, returned as a nil bundle.
func Resolve(inline string, source *Source, l Listers) ([]byte, error) {
	switch {
	case inline != "" && source != nil:
		return nil, invalid("spec.tls.certificateAuthorityData and spec.tls.certificateAuthorityDataSource are mutually exclusive")
	case inline != "":
		pem, err := base64.StdEncoding.DecodeString(inline)
		if err != nil {
			return nil, invalid("spec.tls.certificateAuthorityData is not valid base64: %v", err)
		}
		return validPEM(pem, "spec.tls.certificateAuthorityData")
	case source != nil:
		pem, err := fromSource(source, l)
		if err != nil {
			return nil, err
		}
		return validPEM(pem, fmt.Sprintf("key %q of %s %s/%s", source.Key, source.Kind, l.Namespace, source.Name))
	}
	return nil, nil
}

func fromSource(s *Source, l Listers) ([]byte, error) {
	where := fmt.Sprintf("%s %s/%s", s.Kind, l.Namespace, s.Name)
	switch s.Kind {
	case "Secret":
		secret, err := l.Secrets.Secrets(l.Namespace).Get(s.Name)
		if err != nil {
			return nil, lookupError(where, err)
		}
		if secret.Type != corev1.SecretTypeTLS && secret.Type != corev1.SecretTypeOpaque {
			return nil, invalid("%s has type %q; want %q or %q", where, secret.Type, corev1.SecretTypeTLS, corev1.SecretTypeOpaque)
		}
		v, ok := secret.Data[s.Key]
		if !ok {
			return nil, invalid("%s has no key %q", where, s.Key)
		}
		return v, nil
	case "ConfigMap":
		cm, err := l.ConfigMaps.ConfigMaps(l.Namespace).Get(s.Name)
		if err != nil {
			return nil, lookupError(where, err)
		}
		if v, ok := cm.Data[s.Key]; ok {
			return []byte(v), nil
		}
		if v, ok := cm.BinaryData[s.Key]; ok {
			return v, nil
		}
		return nil, invalid("%s has no key %q", where, s.Key)
	}
	return nil, invalid("spec.tls.certificateAuthorityDataSource.kind must be Secret or ConfigMap, got %q", s.Kind)
}

func lookupError(where string, err error) error {
	if apierrors.IsNotFound(err) {
		return invalid("%s not found", where)
	}
	return invalid("reading %s: %v", where, err)
}

func validPEM(pem []byte, where string) ([]byte, error) {
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return nil, invalid("%s holds no PEM certificate", where)
	}
	return pem, nil
}

func invalid(format string, args ...any) error {
	return &Error{Reason: ReasonInvalidTLSConfig, Message: fmt.Sprintf(format, args...)}
}
