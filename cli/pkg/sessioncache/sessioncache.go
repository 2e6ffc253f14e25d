// Package sessioncache stores the OIDC sessions of the pinniped CLI (the tokens of each login, see
// oidclogin.SessionCache), so that kubectl calls reuse an ID token or refresh it instead of
// logging in again.
//
// The cache is one YAML file (by default ~/.config/pinniped/sessions.yaml) of kind SessionCache,
// apiVersion config.supervisor.pinniped.dev/v1alpha1, readable only by its owner, with one entry
// per oidclogin.SessionKey. Every read-modify-write holds an exclusive flock on a sibling
// "<file>.lock". A file that cannot be parsed, or that has another kind or version, is treated as
// empty and replaced on the next write; sessions unused for 90 days are dropped.
package sessioncache

import (
	"fmt"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"sealion.dev/cli/internal/lockedfile"
	"sealion.dev/cli/pkg/oidclogin"
)

const (
	// APIVersion and Kind identify the file format.
	APIVersion = "config.supervisor.pinniped.dev/v1alpha1"
	Kind       = "SessionCache"

	maxIdle            = 90 * 24 * time.Hour
	defaultLockTimeout = 10 * time.Second
)

// DefaultPath is $XDG_CONFIG_HOME/pinniped/sessions.yaml, or ~/.config/pinniped/sessions.yaml
// when xdgConfigHome is empty.
func DefaultPath(home, xdgConfigHome string) string {
	if xdgConfigHome != "" {
		return filepath.Join(xdgConfigHome, "pinniped", "sessions.yaml")
	}
	return filepath.Join(home, ".config", "pinniped", "sessions.yaml")
}

// Cache is a session cache file. It implements oidclogin.SessionCache.
type Cache struct {
	path        string
	now         func() time.Time
	lockTimeout time.Duration
	report      func(error)
}

var _ oidclogin.SessionCache = (*Cache)(nil)

// Option configures a Cache.
type Option func(*Cache)

// WithClock sets the clock used for pruning and timestamps.
func WithClock(now func() time.Time) Option { return func(c *Cache) { c.now = now } }

// WithLockTimeout sets how long to wait for another process's lock (10 s by default).
func WithLockTimeout(d time.Duration) Option { return func(c *Cache) { c.lockTimeout = d } }

// WithErrorReporter receives the failures to read or write the file, which are otherwise ignored:
// a broken cache only costs a login.
func WithErrorReporter(report func(error)) Option { return func(c *Cache) { c.report = report } }

// New returns the cache stored at path. Nothing is read or written until GetToken or PutToken.
func New(path string, opts ...Option) *Cache {
	c := &Cache{path: path, now: time.Now, lockTimeout: defaultLockTimeout, report: func(error) {}}
	for _, opt := range opts {
		opt(c)
	}
	return c
}

// GetToken returns the tokens stored under key, or nil, and marks the session used.
func (c *Cache) GetToken(key oidclogin.SessionKey) *oidclogin.Token {
	var found *oidclogin.Token
	c.update(func(f *file, now metav1.Time) {
		for i := range f.Sessions {
			if f.Sessions[i].Key.Equal(key) {
				f.Sessions[i].LastUsedTimestamp = now
				found = f.Sessions[i].Tokens
			}
		}
	})
	return found
}

// PutToken stores tokens under key, replacing any session with the same key; nil tokens remove
// the session.
func (c *Cache) PutToken(key oidclogin.SessionKey, tokens *oidclogin.Token) {
	c.update(func(f *file, now metav1.Time) {
		created := now
		kept := f.Sessions[:0]
		for _, s := range f.Sessions {
			if s.Key.Equal(key) {
				created = s.CreationTimestamp
				continue
			}
			kept = append(kept, s)
		}
		f.Sessions = kept
		if tokens != nil {
			f.Sessions = append(f.Sessions, session{Key: key, CreationTimestamp: created, LastUsedTimestamp: now, Tokens: tokens})
		}
	})
}

type file struct {
	metav1.TypeMeta `json:",inline"`
	Sessions        []session `json:"sessions"`
}

type session struct {
	Key               oidclogin.SessionKey `json:"key"`
	CreationTimestamp metav1.Time          `json:"creationTimestamp"`
	LastUsedTimestamp metav1.Time          `json:"lastUsedTimestamp"`
	Tokens            *oidclogin.Token     `json:"tokens"`
}

// update runs change on the pruned file contents under the lock and writes the result back.
func (c *Cache) update(change func(*file, metav1.Time)) {
	lf := lockedfile.File{Path: c.path, Name: "session cache", LockTimeout: c.lockTimeout}
	err := lf.Update(func(old []byte) ([]byte, error) {
		now := metav1.NewTime(c.now().UTC().Truncate(time.Second))
		f := c.parse(old)
		f.prune(now.Time)
		change(f, now)
		data, err := yaml.Marshal(f)
		if err != nil {
			return nil, fmt.Errorf("encoding the session cache: %w", err)
		}
		return data, nil
	})
	if err != nil {
		c.report(err)
	}
}

// parse returns the file's contents, or an empty cache when it is missing, corrupt or foreign.
func (c *Cache) parse(data []byte) *file {
	empty := &file{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind}}
	if len(data) == 0 {
		return empty
	}
	var f file
	if err := yaml.Unmarshal(data, &f); err != nil {
		c.report(fmt.Errorf("the session cache %s is corrupt, so it is replaced: %w", c.path, err))
		return empty
	}
	if f.APIVersion != APIVersion || f.Kind != Kind {
		c.report(fmt.Errorf("the session cache %s holds a %s %s, so it is replaced", c.path, f.APIVersion, f.Kind))
		return empty
	}
	return &f
}

func (f *file) prune(now time.Time) {
	kept := f.Sessions[:0]
	for _, s := range f.Sessions {
		if s.Tokens != nil && now.Sub(s.LastUsedTimestamp.Time) <= maxIdle {
			kept = append(kept, s)
		}
	}
	f.Sessions = kept
}
