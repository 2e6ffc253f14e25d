// Package credentialcache stores the ExecCredentials that the pinniped CLI hands to kubectl, so that
// repeated kubectl calls reuse a still-valid cluster credential instead of logging in again.
//
// The cache is one YAML file (by default ~/.config/pinniped/credentials.yaml) of kind
// CredentialCache, apiVersion config.supervisor.pinniped.dev/v1alpha1, readable only by its owner.
// Every read-modify-write holds an exclusive flock on a sibling "<file>.lock", so several kubectl
// processes running the plugin at once do not lose each other's entries. A file that cannot be
// parsed, or that has another kind or version, is treated as empty and replaced on the next write.
package credentialcache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientauthv1 "k8s.io/client-go/pkg/apis/clientauthentication/v1"
	clientauthv1beta1 "k8s.io/client-go/pkg/apis/clientauthentication/v1beta1"
	"sigs.k8s.io/yaml"

	"sealion.dev/cli/internal/lockedfile"
)

const (
	// APIVersion and Kind identify the file format.
	APIVersion = "config.supervisor.pinniped.dev/v1alpha1"
	Kind       = "CredentialCache"

	// maxIdle drops entries nobody asked for in this long.
	maxIdle = time.Hour
	// expiryMargin treats a credential that is about to expire as expired: kubectl uses it right
	// after we return it, and the request must still reach the server in time.
	expiryMargin = 10 * time.Second

	defaultLockTimeout = 10 * time.Second
)

// DefaultPath is ~/.config/pinniped/credentials.yaml for the given home directory.
func DefaultPath(home string) string {
	return filepath.Join(home, ".config", "pinniped", "credentials.yaml")
}

// Key identifies a cached credential: the CLI arguments that produced it and the cluster kubectl
// passed in KUBERNETES_EXEC_INFO (nil when the kubeconfig does not provide cluster info).
type Key struct {
	Args    []string              `json:"args"`
	Cluster *clientauthv1.Cluster `json:"cluster,omitempty"`
}

// Hash is the key as stored in the file: the hex SHA-256 of its JSON.
func (k Key) Hash() (string, error) {
	data, err := json.Marshal(k)
	if err != nil {
		return "", fmt.Errorf("encoding credential cache key: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// Cache is a credential cache file.
type Cache struct {
	path        string
	now         func() time.Time
	lockTimeout time.Duration
}

// Option configures a Cache.
type Option func(*Cache)

// WithClock sets the clock used for expiry, pruning and timestamps.
func WithClock(now func() time.Time) Option { return func(c *Cache) { c.now = now } }

// WithLockTimeout sets how long to wait for another process's lock (10 s by default).
func WithLockTimeout(d time.Duration) Option { return func(c *Cache) { c.lockTimeout = d } }

// New returns the cache stored at path. Nothing is read or written until Get or Put.
func New(path string, opts ...Option) *Cache {
	c := &Cache{path: path, now: time.Now, lockTimeout: defaultLockTimeout}
	for _, opt := range opts {
		opt(c)
	}
	return c
}

// Get returns the still-valid credential stored under key, or nil. A hit refreshes the entry's
// last-used time; expired and idle entries are pruned.
func (c *Cache) Get(key Key) (*clientauthv1beta1.ExecCredentialStatus, error) {
	hash, err := key.Hash()
	if err != nil {
		return nil, err
	}
	var found *clientauthv1beta1.ExecCredentialStatus
	err = c.update(func(f *file, now metav1.Time) {
		for i := range f.Credentials {
			if f.Credentials[i].Key == hash {
				f.Credentials[i].LastUsedTimestamp = now
				found = f.Credentials[i].Credential.DeepCopy()
			}
		}
	})
	return found, err
}

// Put stores cred under key, replacing any entry with the same key.
func (c *Cache) Put(key Key, cred *clientauthv1beta1.ExecCredentialStatus) error {
	hash, err := key.Hash()
	if err != nil {
		return err
	}
	return c.update(func(f *file, now metav1.Time) {
		kept := f.Credentials[:0]
		for _, e := range f.Credentials {
			if e.Key != hash {
				kept = append(kept, e)
			}
		}
		f.Credentials = append(kept, entry{Key: hash, CreationTimestamp: now, LastUsedTimestamp: now, Credential: cred.DeepCopy()})
	})
}

// Clear removes every cached credential. They are only ever a shortcut: the next kubectl call of
// each cluster makes its credential again from its session.
func (c *Cache) Clear() error {
	return c.update(func(f *file, _ metav1.Time) { f.Credentials = nil })
}

type file struct {
	metav1.TypeMeta `json:",inline"`
	Credentials     []entry `json:"credentials"`
}

type entry struct {
	Key               string                                  `json:"key"`
	CreationTimestamp metav1.Time                             `json:"creationTimestamp"`
	LastUsedTimestamp metav1.Time                             `json:"lastUsedTimestamp"`
	Credential        *clientauthv1beta1.ExecCredentialStatus `json:"credential"`
}

// update runs change on the pruned file contents under the lock and writes the result back.
func (c *Cache) update(change func(*file, metav1.Time)) error {
	lf := lockedfile.File{Path: c.path, Name: "credential cache", LockTimeout: c.lockTimeout}
	return lf.Update(func(old []byte) ([]byte, error) {
		now := metav1.NewTime(c.now().UTC().Truncate(time.Second))
		f := parse(old)
		f.prune(now.Time)
		change(f, now)
		data, err := yaml.Marshal(f)
		if err != nil {
			return nil, fmt.Errorf("encoding the credential cache: %w", err)
		}
		return data, nil
	})
}

// parse returns the file's contents, or an empty cache when it is missing, corrupt or foreign.
func parse(data []byte) *file {
	empty := &file{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind}}
	var f file
	if err := yaml.Unmarshal(data, &f); err != nil || f.APIVersion != APIVersion || f.Kind != Kind {
		return empty
	}
	return &f
}

func (f *file) prune(now time.Time) {
	kept := f.Credentials[:0]
	for _, e := range f.Credentials {
		if e.Credential == nil || now.Sub(e.LastUsedTimestamp.Time) > maxIdle {
			continue
		}
		if exp := e.Credential.ExpirationTimestamp; exp != nil && !now.Add(expiryMargin).Before(exp.Time) {
			continue
		}
		kept = append(kept, e)
	}
	f.Credentials = kept
}
