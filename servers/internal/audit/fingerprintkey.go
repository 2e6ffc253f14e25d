package audit

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

const (
	// TokenFingerprintKeySize is the size of the key a server generates, and the least it accepts.
	TokenFingerprintKeySize = 32
	// TokenFingerprintKeyDataKey is the key of the Secret's data that holds the key.
	TokenFingerprintKeyDataKey = "key"
	// TokenFingerprintKeySecretType is the type of the Secret a server creates.
	TokenFingerprintKeySecretType corev1.SecretType = "secrets.pinniped.dev/audit-token-fingerprint-key"
)

// LoadTokenFingerprintKey returns the key of the Secret name (in the namespace of secrets),
// creating the Secret with a new random key and labels when there is none. Every replica of an
// installation reads the same Secret, so their events name a token alike; an operator who wants
// two installations' events to match (a Supervisor's and a Concierge's) gives both Secrets the
// same key before they start. The Secret is read once: a changed key takes effect at the next
// restart. Transient API errors are retried until ctx ends.
func LoadTokenFingerprintKey(ctx context.Context, secrets corev1client.SecretInterface, name string, labels map[string]string) ([]byte, error) {
	var key []byte
	var last error
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 30, Cap: 5 * time.Second}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		key, last = getOrCreate(ctx, secrets, name, labels)
		if last == nil {
			return true, nil
		}
		if isPermanent(last) {
			return false, last
		}
		return false, nil
	})
	if err != nil {
		if last != nil {
			err = last
		}
		return nil, fmt.Errorf("the audit token fingerprint key in Secret %s: %w", name, err)
	}
	return key, nil
}

// TokenFingerprintKeySecretName is the Secret of the key: configured, or else named after the
// server's Deployment.
func TokenFingerprintKeySecretName(configured, deploymentName string) string {
	if configured != "" {
		return configured
	}
	return deploymentName + "-audit-token-fingerprint-key"
}

// ValidateSecretName checks the configured name of the key's Secret (field is its config key): empty,
// or a Secret's name.
func ValidateSecretName(field, name string) error {
	if name == "" {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("%s: %q is not a Secret's name: %s", field, name, strings.Join(errs, "; "))
	}
	return nil
}

// errShortKey is permanent: an operator wrote the Secret, and must fix it.
type errShortKey struct{ size int }

func (e errShortKey) Error() string {
	return fmt.Sprintf("data[%q] holds %d bytes; it needs at least %d", TokenFingerprintKeyDataKey, e.size, TokenFingerprintKeySize)
}

func isPermanent(err error) bool {
	_, short := err.(errShortKey)
	return short || apierrors.IsForbidden(err) || apierrors.IsInvalid(err)
}

func getOrCreate(ctx context.Context, secrets corev1client.SecretInterface, name string, labels map[string]string) ([]byte, error) {
	s, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		key := make([]byte, TokenFingerprintKeySize)
		_, _ = rand.Read(key) // never fails (crypto/rand)
		s, err = secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Type:       TokenFingerprintKeySecretType,
			Data:       map[string][]byte{TokenFingerprintKeyDataKey: key},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Another replica created it first: theirs is the installation's.
			s, err = secrets.Get(ctx, name, metav1.GetOptions{})
		}
	}
	if err != nil {
		return nil, err
	}
	key := s.Data[TokenFingerprintKeyDataKey]
	if len(key) < TokenFingerprintKeySize {
		return nil, errShortKey{len(key)}
	}
	return key, nil
}
