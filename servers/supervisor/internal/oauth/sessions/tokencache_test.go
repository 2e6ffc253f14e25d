package sessions

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ory/fosite"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"

	"sealion.dev/servers/supervisor/internal/oauth/sessions/sessionstest"
)

// watchedStore is a store whose access token watch the test drives: each watch the store starts
// is sent to watches, and reads and lists are counted.
type watchedStore struct {
	*Store
	req            *fosite.Request
	watches        chan *watch.RaceFreeFakeWatcher
	gets, lists    atomic.Int32
	deleteFromEtcd func(name string)
}

func newWatchedStore(t *testing.T) *watchedStore {
	t.Helper()
	clientset := sessionstest.OptimisticClientset()
	w := &watchedStore{watches: make(chan *watch.RaceFreeFakeWatcher, 4)}
	clientset.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		w.gets.Add(1)
		return false, nil, nil
	})
	clientset.PrependReactor("list", "secrets", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.(k8stesting.ListActionImpl).ListOptions.Limit != 1 {
			return false, nil, nil
		}
		w.lists.Add(1)
		return true, &corev1.SecretList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
	})
	clientset.PrependWatchReactor("secrets", func(k8stesting.Action) (bool, watch.Interface, error) {
		fw := watch.NewRaceFreeFake()
		w.watches <- fw
		return true, fw, nil
	})
	client := &fosite.DefaultClient{ID: "pinniped-cli"}
	w.Store = NewStorage(clientset.CoreV1().Secrets(namespace), noConnectors{}, sessionstest.Keys()).ForClients(oneClient{client})
	w.req = fosite.NewRequest()
	w.req.ID, w.req.Client, w.req.Session = "login-1", client, NewSession()
	w.deleteFromEtcd = func(name string) {
		if err := clientset.CoreV1().Secrets(namespace).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.WatchAccessTokens(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

// issue stores an access token and returns its Secret as the API server would send it in a watch
// event, created at created.
func (w *watchedStore) issue(t *testing.T, signature string, created time.Time) *corev1.Secret {
	t.Helper()
	if err := w.CreateAccessTokenSession(context.Background(), signature, w.req); err != nil {
		t.Fatal(err)
	}
	secret, err := w.secrets.Get(context.Background(), SecretName(typeAccessToken, signature), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.gets.Store(0)
	secret.CreationTimestamp = metav1.NewTime(created)
	return secret
}

func (w *watchedStore) nextWatch(t *testing.T) *watch.RaceFreeFakeWatcher {
	t.Helper()
	select {
	case fw := <-w.watches:
		return fw
	case <-time.After(10 * time.Second):
		t.Fatal("the store started no watch")
		return nil
	}
}

// eventually waits for the watch event just sent to be applied.
func (w *watchedStore) eventually(t *testing.T, name string, wantCached bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, cached := w.cachedAccessToken(name); cached == wantCached {
			return
		}
	}
	t.Fatalf("%s cached is not %v", name, wantCached)
}

// The exchange of a token the watch saw issued reads no Secret; once the watch sees it deleted (a
// revocation, a rotation), it is refused at once.
func TestAccessTokenFromTheWatch(t *testing.T) {
	w := newWatchedStore(t)
	fw := w.nextWatch(t)
	secret := w.issue(t, "sig", time.Now())
	fw.Add(secret)
	w.eventually(t, secret.Name, true)
	if _, err := w.GetAccessTokenSession(context.Background(), "sig", NewSession()); err != nil {
		t.Fatal(err)
	}
	if n := w.gets.Load(); n != 0 {
		t.Fatalf("%d reads of the API server for a token the watch has", n)
	}

	w.deleteFromEtcd(secret.Name)
	fw.Delete(secret)
	w.eventually(t, secret.Name, false)
	if _, err := w.GetAccessTokenSession(context.Background(), "sig", NewSession()); !errors.Is(err, fosite.ErrNotFound) {
		t.Fatalf("a revoked token: got %v, want fosite.ErrNotFound", err)
	}
}

// A token past its lifetime when the watch sees it is not kept: it would take the place of
// tokens that can still be used.
func TestAccessTokenExpiredIsNotCached(t *testing.T) {
	w := newWatchedStore(t)
	fw := w.nextWatch(t)
	old := w.issue(t, "old", time.Now().Add(-AccessTokenLifetime-time.Second))
	fresh := w.issue(t, "fresh", time.Now())
	fw.Add(old)
	fw.Add(fresh)
	w.eventually(t, fresh.Name, true)
	if _, cached := w.cachedAccessToken(old.Name); cached {
		t.Fatal("an expired token was cached")
	}
}

// A watch that ends with an error may have missed deletions: what it cached is dropped before the
// next watch starts from a new list.
func TestAccessTokenWatchFailureEmptiesTheCache(t *testing.T) {
	w := newWatchedStore(t)
	fw := w.nextWatch(t)
	secret := w.issue(t, "sig", time.Now())
	fw.Add(secret)
	w.eventually(t, secret.Name, true)

	fw.Error(&metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired, Message: "too old resource version"})
	w.nextWatch(t)
	w.eventually(t, secret.Name, false)
	if n := w.lists.Load(); n != 2 {
		t.Fatalf("%d lists, want one per watch (2)", n)
	}
}
