// Package clientsecrets keeps the secrets of OIDCClients: it generates new ones and stores only their
// bcrypt hashes, in one Secret per client in the Supervisor's namespace, in Pinniped's session
// storage format (so an existing install's Secrets keep working):
//
//   - name `pinniped-storage-oidc-client-secret-<lowercase unpadded base32 of the client's UID>`,
//   - type `storage.pinniped.dev/oidc-client-secret`, label `storage.pinniped.dev/type: oidc-client-secret`,
//   - data `pinniped-storage-version: "1"` and `pinniped-storage-data: {"hashes": [...], "version": "1"}`,
//     newest hash first,
//   - owned by the OIDCClient, so that deleting the client deletes its secrets.
package clientsecrets

import (
	"bytes"
	"context"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

const (
	// BcryptCost is the cost of new hashes: about 250 ms per check, which the token endpoint pays
	// once per stored hash.
	BcryptCost = 12
	// MaxSecrets bounds the hashes stored per client, and so the cost of a failed check.
	MaxSecrets = 5

	// TypeLabelKey and TypeLabelValue label every storage Secret, to find them with kubectl.
	TypeLabelKey   = "storage.pinniped.dev/type"
	TypeLabelValue = "oidc-client-secret"
	// SecretType is the type of every storage Secret.
	SecretType corev1.SecretType = "storage.pinniped.dev/" + TypeLabelValue

	namePrefix     = "pinniped-storage-" + TypeLabelValue + "-"
	dataKey        = "pinniped-storage-data"
	versionKey     = "pinniped-storage-version"
	storageVersion = "1" // of the Secret layout, in versionKey
	hashesVersion  = "1" // of the JSON document, in its "version" field
	secretBytes    = 32
)

// ErrInvalidStorage means a storage Secret is not in the expected format.
var ErrInvalidStorage = errors.New("invalid OIDC client secret storage")

var nameEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// SecretName is the name of the storage Secret of the OIDCClient with uid.
func SecretName(uid types.UID) string {
	return namePrefix + strings.ToLower(nameEncoding.EncodeToString([]byte(uid)))
}

// Generate returns a new client secret: 32 random bytes as 64 hex characters.
func Generate(rand io.Reader) (string, error) {
	b := make([]byte, secretBytes)
	if _, err := io.ReadFull(rand, b); err != nil {
		return "", fmt.Errorf("generating a client secret: %w", err)
	}
	return hex.EncodeToString(b), nil
}

type document struct {
	Hashes  []string `json:"hashes"`
	Version string   `json:"version"`
}

// Hashes reads the bcrypt hashes from a storage Secret, after checking its type, label and versions.
func Hashes(secret *corev1.Secret) ([]string, error) {
	switch {
	case secret.Type != SecretType:
		return nil, fmt.Errorf("%w: Secret %s has type %q, want %q", ErrInvalidStorage, secret.Name, secret.Type, SecretType)
	case secret.Labels[TypeLabelKey] != TypeLabelValue:
		return nil, fmt.Errorf("%w: Secret %s has label %s=%q, want %q", ErrInvalidStorage, secret.Name, TypeLabelKey, secret.Labels[TypeLabelKey], TypeLabelValue)
	case !bytes.Equal(secret.Data[versionKey], []byte(storageVersion)):
		return nil, fmt.Errorf("%w: Secret %s has %s %q, want %q", ErrInvalidStorage, secret.Name, versionKey, secret.Data[versionKey], storageVersion)
	}
	var doc document
	if err := json.Unmarshal(secret.Data[dataKey], &doc); err != nil {
		return nil, fmt.Errorf("%w: Secret %s: decoding %s: %v", ErrInvalidStorage, secret.Name, dataKey, err)
	}
	if doc.Version != hashesVersion {
		return nil, fmt.Errorf("%w: Secret %s holds hashes of version %q, want %q", ErrInvalidStorage, secret.Name, doc.Version, hashesVersion)
	}
	return doc.Hashes, nil
}

// Owner is the OIDCClient a storage Secret belongs to.
type Owner struct {
	// APIVersion is the OIDCClient's group (with the installation's suffix) and version.
	APIVersion string
	Name       string
	UID        types.UID
}

// Store reads and writes the storage Secrets of one namespace.
type Store struct {
	// Secrets is the Secrets client of the Supervisor's namespace.
	Secrets corev1client.SecretInterface
	// Labels are added to the Secrets the Store creates (the installation's labels).
	Labels map[string]string
}

// Record is what Load read: the client's hashes, newest first, and the Secret they came from.
type Record struct {
	Hashes []string
	secret *corev1.Secret // nil when the client has no storage Secret yet
}

// Load reads the hashes of the OIDCClient with uid; a client without a storage Secret has none.
func (s *Store) Load(ctx context.Context, uid types.UID) (*Record, error) {
	secret, err := s.Secrets.Get(ctx, SecretName(uid), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &Record{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the client secrets of OIDCClient UID %s: %w", uid, err)
	}
	hashes, err := Hashes(secret)
	if err != nil {
		return nil, err
	}
	return &Record{Hashes: hashes, secret: secret}, nil
}

// Save replaces the hashes of the client whose Record was loaded. It creates the storage Secret if
// Load found none, and otherwise updates it at the version Load read, so that of two concurrent
// changes one fails with an AlreadyExists or Conflict error instead of being lost.
func (s *Store) Save(ctx context.Context, owner Owner, rec *Record, hashes []string) error {
	data, err := json.Marshal(document{Hashes: hashes, Version: hashesVersion})
	if err != nil {
		return err
	}
	if rec.secret != nil {
		secret := rec.secret.DeepCopy()
		secret.Data = map[string][]byte{dataKey: data, versionKey: []byte(storageVersion)}
		if _, err := s.Secrets.Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating the client secrets of OIDCClient %s: %w", owner.Name, err)
		}
		return nil
	}
	labels := make(map[string]string, len(s.Labels)+1)
	for k, v := range s.Labels {
		labels[k] = v
	}
	labels[TypeLabelKey] = TypeLabelValue
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:   SecretName(owner.UID),
			Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: owner.APIVersion, Kind: "OIDCClient", Name: owner.Name, UID: owner.UID,
			}},
		},
		Type: SecretType,
		Data: map[string][]byte{dataKey: data, versionKey: []byte(storageVersion)},
	}
	if _, err := s.Secrets.Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("storing the client secrets of OIDCClient %s: %w", owner.Name, err)
	}
	return nil
}
