package sessioncache

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// FuzzSessionFile reads a session cache file of arbitrary bytes. Whatever it holds, GetToken
// answers without a panic; tokens come only from a well-formed session cache that holds them
// under the key; a file that is not one is reported and reset, and the file is left a
// well-formed session cache.
func FuzzSessionFile(f *testing.F) {
	dir := f.TempDir()
	seedPath := filepath.Join(dir, "seed.yaml")
	clk := &clock{start}
	New(seedPath, WithClock(clk.now)).PutToken(key, tokens("1"))
	valid, err := os.ReadFile(seedPath)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	for _, seed := range []string{
		"apiVersion: config.supervisor.pinniped.dev/v1alpha1\nkind: SessionCache\nsessions:\n- key: {issuer: \"https://issuer.example\", clientID: pinniped-cli, scopes: [groups, offline_access, openid], redirect_uri: \"http://localhost:0/callback\"}\n  lastUsedTimestamp: \"2025-07-01T12:00:00Z\"\n  tokens: {refresh: {token: r}}\n",
		"apiVersion: config.supervisor.pinniped.dev/v1alpha1\nkind: CredentialCache\nsessions:\n- key: {issuer: \"https://issuer.example\", clientID: pinniped-cli, scopes: [groups, offline_access, openid], redirect_uri: \"http://localhost:0/callback\"}\n  lastUsedTimestamp: \"2025-07-01T12:00:00Z\"\n  tokens: {refresh: {token: r}}\n",
		"apiVersion: config.supervisor.pinniped.dev/v1alpha1\nkind: SessionCache\nsessions:\n- key: {issuer: \"https://issuer.example\"}\n  tokens: null\n",
		"sessions: {", "\x00\xff", "", "- a\n", "&a [*a, *a]",
	} {
		f.Add([]byte(seed))
	}
	path := filepath.Join(dir, "sessions.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		var reported []error
		got := New(path, WithClock(clk.now), WithErrorReporter(func(err error) { reported = append(reported, err) })).GetToken(key)
		var held file
		wellFormed := yaml.Unmarshal(data, &held) == nil && held.APIVersion == APIVersion && held.Kind == Kind
		switch {
		case got != nil && !wellFormed:
			t.Fatalf("tokens %+v came from a file that is not a session cache: %q", got, data)
		case !wellFormed && len(data) > 0 && len(reported) == 0:
			t.Fatalf("a file that is not a session cache was replaced silently: %q", data)
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
