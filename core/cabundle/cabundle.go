// Package cabundle resolves the CA bundle an object's TLS spec asks for: inline base64 PEM, or a key
// of a Secret or ConfigMap in the server's own namespace. The result is either a bundle (nil meaning
// "use the system roots") or a reason and message for the TLSConfigurationValid condition.
package cabundle

import (
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
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

// Resolve returns the PEM bundle for an inline base64 value or a source (at most one is set) of the
// TLS spec at field (spec.tls, say). Both empty means the system roots, returned as a nil bundle.
// Error messages are upstream Pinniped's, word for word, since clients and checks compare them.
func Resolve(field, inline string, source *Source, l Listers) ([]byte, error) {
	switch {
	case inline != "" && source != nil:
		return nil, invalid("%s is invalid: both tls.certificateAuthorityDataSource and tls.certificateAuthorityData provided", field)
	case inline != "":
		where := field + ".certificateAuthorityData"
		pem, err := base64.StdEncoding.DecodeString(inline)
		if err != nil {
			return nil, invalid("%s is invalid: %v", where, err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return nil, invalid("%s is invalid: no base64-encoded PEM certificates found in %d bytes of data (%s)", where, len(inline), pemHint)
		}
		return pem, nil
	case source != nil:
		where := field + ".certificateAuthorityDataSource"
		pem, err := fromSource(source, l)
		if err != nil {
			return nil, invalid("%s is invalid: %v", where, err)
		}
		return pem, nil
	}
	return nil, nil
}

// ValidMessage is the message of a true TLSConfigurationValid condition for the TLS spec at field
// whose bundle Resolve returned.
func ValidMessage(field string, bundle []byte) string {
	if len(bundle) == 0 {
		return field + " is valid: no TLS configuration provided: using default root CA bundle from container image"
	}
	return field + " is valid: using configured CA bundle"
}

const pemHint = `PEM certificates must begin with "-----BEGIN CERTIFICATE-----"`

func fromSource(s *Source, l Listers) ([]byte, error) {
	var data []byte
	var found bool
	// Upstream names the kind in lower case: `secret "ns/name"`.
	where := fmt.Sprintf("%s %q", strings.ToLower(s.Kind), l.Namespace+"/"+s.Name)
	switch s.Kind {
	case "Secret":
		secret, err := l.Secrets.Secrets(l.Namespace).Get(s.Name)
		if err != nil {
			return nil, fmt.Errorf("failed to get %s: %w", where, err)
		}
		if secret.Type != corev1.SecretTypeTLS && secret.Type != corev1.SecretTypeOpaque {
			return nil, fmt.Errorf("%s of type %q cannot be used as a certificate authority data source", where, secret.Type)
		}
		data, found = secret.Data[s.Key]
	case "ConfigMap":
		cm, err := l.ConfigMaps.ConfigMaps(l.Namespace).Get(s.Name)
		if err != nil {
			return nil, fmt.Errorf("failed to get %s: %w", where, err)
		}
		var v string
		if v, found = cm.Data[s.Key]; found {
			data = []byte(v)
		} else {
			data, found = cm.BinaryData[s.Key]
		}
	default:
		return nil, fmt.Errorf("unsupported CA bundle source kind: %s", s.Kind)
	}
	switch {
	case !found:
		return nil, fmt.Errorf("key %q not found in %s", s.Key, where)
	case len(data) == 0:
		return nil, fmt.Errorf("key %q has empty value in %s", s.Key, where)
	case !x509.NewCertPool().AppendCertsFromPEM(data):
		return nil, fmt.Errorf("key %q with %d bytes of data in %s is not a PEM-encoded certificate (%s)", s.Key, len(data), where, pemHint)
	}
	return data, nil
}

func invalid(format string, args ...any) error {
	return &Error{Reason: ReasonInvalidTLSConfig, Message: fmt.Sprintf(format, args...)}
}
