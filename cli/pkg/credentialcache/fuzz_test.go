package credentialcache

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// FuzzCacheFile reads a credential cache file of arbitrary bytes. Whatever it holds, Get answers
// without a panic; a credential comes only from a well-formed cache of our kind that holds it
// unexpired under the key; and the file is left a well-formed cache (a corrupt one is reset).
func FuzzCacheFile(f *testing.F) {
	key := Key{Args: []string{"login", "static", "--token=x"}}
	hash, err := key.Hash()
	if err != nil {
		f.Fatal(err)
	}
	dir := f.TempDir()
	seedPath := filepath.Join(dir, "seed.yaml")
	clk := &clock{start}
	if err := New(seedPath, WithClock(clk.now)).Put(key, cred("t", start.Add(time.Hour))); err != nil {
		f.Fatal(err)
	}
	valid, err := os.ReadFile(seedPath)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	for _, seed := range []string{
		"apiVersion: config.supervisor.pinniped.dev/v1alpha1\nkind: CredentialCache\ncredentials:\n- key: " + hash + "\n  credential: {token: t}\n  lastUsedTimestamp: \"2025-07-01T12:00:00Z\"\n",
		"apiVersion: config.supervisor.pinniped.dev/v1alpha1\nkind: SessionCache\ncredentials:\n- key: " + hash + "\n  credential: {token: t}\n  lastUsedTimestamp: \"2025-07-01T12:00:00Z\"\n",
		"apiVersion: config.supervisor.pinniped.dev/v1alpha1\nkind: CredentialCache\ncredentials:\n- key: " + hash + "\n  credential: {token: t, expirationTimestamp: \"2025-07-01T12:00:00Z\"}\n  lastUsedTimestamp: \"2025-07-01T12:00:00Z\"\n",
		"apiVersion: config.supervisor.pinniped.dev/v1alpha1\nkind: CredentialCache\ncredentials:\n- key: " + hash + "\n  credential: null\n",
		"credentials: [[[", "\x00\xff", "", "- a\n- b\n", "&a [*a, *a]",
	} {
		f.Add([]byte(seed))
	}
	path := filepath.Join(dir, "credentials.yaml")
	c := New(path, WithClock(clk.now))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := c.Get(key)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if got != nil {
			var held file
			if yaml.Unmarshal(data, &held) != nil || held.APIVersion != APIVersion || held.Kind != Kind {
				t.Fatalf("a credential %+v came from a file that is not a credential cache: %q", got, data)
			}
			if exp := got.ExpirationTimestamp; exp != nil && !start.Add(expiryMargin).Before(exp.Time) {
				t.Fatalf("an expired credential came from the cache: %+v", got)
			}
		}
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var left file
		if err := yaml.Unmarshal(after, &left); err != nil || left.APIVersion != APIVersion || left.Kind != Kind {
			t.Fatalf("the cache was left malformed (%v): %q", err, after)
		}
	})
}
