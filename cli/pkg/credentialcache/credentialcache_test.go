package credentialcache

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientauthv1 "k8s.io/client-go/pkg/apis/clientauthentication/v1"
	clientauthv1beta1 "k8s.io/client-go/pkg/apis/clientauthentication/v1beta1"
)

var start = time.Date(2025, 7, 1, 12, 0, 0, 0, time.UTC)

func cred(token string, expires time.Time) *clientauthv1beta1.ExecCredentialStatus {
	exp := metav1.NewTime(expires)
	return &clientauthv1beta1.ExecCredentialStatus{Token: token, ExpirationTimestamp: &exp}
}

// clock is a settable clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestKeyHash(t *testing.T) {
	a, err := Key{Args: []string{"login", "static", "--token=x"}}.Hash()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Key{Args: []string{"login", "static", "--token=x"}, Cluster: &clientauthv1.Cluster{Server: "https://a"}}.Hash()
	c, _ := Key{Args: []string{"login", "static", "--token=x"}}.Hash()
	if len(a) != 64 || strings.Trim(a, "0123456789abcdef") != "" {
		t.Errorf("hash %q is not 64 hex digits", a)
	}
	if a == b {
		t.Error("the cluster info does not change the key")
	}
	if a != c {
		t.Error("the same key hashes differently")
	}
}

func TestGetPut(t *testing.T) {
	key := Key{Args: []string{"a"}}
	other := Key{Args: []string{"b"}}
	tests := []struct {
		name    string
		put     *clientauthv1beta1.ExecCredentialStatus
		advance time.Duration
		getKey  Key
		want    string // token, "" for a miss
	}{
		{name: "hit", put: cred("t1", start.Add(5*time.Minute)), getKey: key, want: "t1"},
		{name: "other key misses", put: cred("t1", start.Add(5*time.Minute)), getKey: other},
		{name: "expired", put: cred("t1", start.Add(5*time.Minute)), advance: 6 * time.Minute, getKey: key},
		{name: "about to expire", put: cred("t1", start.Add(5*time.Minute)), advance: 5*time.Minute - 5*time.Second, getKey: key},
		{name: "idle for over an hour", put: &clientauthv1beta1.ExecCredentialStatus{Token: "forever"}, advance: 61 * time.Minute, getKey: key},
		{name: "no expiry, recently used", put: &clientauthv1beta1.ExecCredentialStatus{Token: "forever"}, advance: 59 * time.Minute, getKey: key, want: "forever"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &clock{start}
			c := New(filepath.Join(t.TempDir(), "sub", "credentials.yaml"), WithClock(clk.now))
			if err := c.Put(key, tt.put); err != nil {
				t.Fatal(err)
			}
			clk.t = clk.t.Add(tt.advance)
			got, err := c.Get(tt.getKey)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == "" && got != nil:
				t.Errorf("got %+v, want a miss", got)
			case tt.want != "" && (got == nil || got.Token != tt.want):
				t.Errorf("got %+v, want token %q", got, tt.want)
			}
		})
	}
}

func TestFileFormatAndPruning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "credentials.yaml")
	clk := &clock{start}
	c := New(path, WithClock(clk.now))
	if err := c.Put(Key{Args: []string{"old"}}, cred("old", start.Add(2*time.Minute))); err != nil {
		t.Fatal(err)
	}
	clk.t = start.Add(3 * time.Minute)
	if err := c.Put(Key{Args: []string{"new"}}, cred("new", start.Add(8*time.Minute))); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	text := string(data)
	for _, want := range []string{"apiVersion: " + APIVersion, "kind: " + Kind, "token: new", "creationTimestamp: \"2025-07-01T12:03:00Z\"", "lastUsedTimestamp:"} {
		if !strings.Contains(text, want) {
			t.Errorf("file lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "token: old") {
		t.Errorf("the expired entry was not pruned:\n%s", text)
	}
	newHash, _ := Key{Args: []string{"new"}}.Hash()
	if !strings.Contains(text, "key: "+newHash) {
		t.Errorf("the entry is not keyed by the key's hash:\n%s", text)
	}
}

func TestCorruptOrForeignFileIsReplaced(t *testing.T) {
	for name, content := range map[string]string{
		"corrupt":       "{{{ not yaml",
		"other kind":    "apiVersion: " + APIVersion + "\nkind: SessionCache\nsessions: []\n",
		"other version": "apiVersion: config.supervisor.pinniped.dev/v2\nkind: CredentialCache\ncredentials: []\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "credentials.yaml")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			c := New(path, WithClock((&clock{start}).now))
			got, err := c.Get(Key{Args: []string{"a"}})
			if err != nil || got != nil {
				t.Fatalf("Get = %v, %v; want a miss and no error", got, err)
			}
			if err := c.Put(Key{Args: []string{"a"}}, cred("t", start.Add(time.Minute))); err != nil {
				t.Fatal(err)
			}
			if got, err := c.Get(Key{Args: []string{"a"}}); err != nil || got == nil || got.Token != "t" {
				t.Fatalf("after Put, Get = %+v, %v", got, err)
			}
		})
	}
}

func TestConcurrentWritersKeepEveryEntry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "credentials.yaml")
	const writers = 20
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each writer has its own Cache and therefore its own lock file descriptor, as
			// separate processes would.
			c := New(path)
			errs <- c.Put(Key{Args: []string{fmt.Sprint(i)}}, cred(fmt.Sprint(i), time.Now().Add(time.Hour)))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c := New(path)
	for i := range writers {
		got, err := c.Get(Key{Args: []string{fmt.Sprint(i)}})
		if err != nil || got == nil || got.Token != fmt.Sprint(i) {
			t.Errorf("entry %d: got %+v, %v", i, got, err)
		}
	}
}

func TestLockTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "credentials.yaml")
	held := flock.New(path + ".lock")
	if err := held.Lock(); err != nil {
		t.Fatal(err)
	}
	c := New(path, WithLockTimeout(100*time.Millisecond))
	begin := time.Now()
	err := c.Put(Key{Args: []string{"a"}}, cred("t", time.Now().Add(time.Hour)))
	if err == nil || !strings.Contains(err.Error(), "locking the credential cache") {
		t.Fatalf("err = %v, want a lock error", err)
	}
	if waited := time.Since(begin); waited < 100*time.Millisecond {
		t.Errorf("gave up after %s, before the timeout", waited)
	}
	if err := held.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(Key{Args: []string{"a"}}, cred("t", time.Now().Add(time.Hour))); err != nil {
		t.Fatalf("after the lock was released: %v", err)
	}
}
