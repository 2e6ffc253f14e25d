package conformance

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"sealion.dev/e2e/steps"
)

const (
	// mixClients is how many clients send requests while a Deployment rolls: all of them
	// exchanging tokens, or, where the impersonation proxy serves, half exchanging and half
	// listing through the proxy.
	mixClients = 32
	// mixWatchers hold watches through the proxy meanwhile.
	mixWatchers = 4
	// mixObjects is how many ConfigMaps each LIST through the proxy returns.
	mixObjects = 50
	// mixWatched is the ConfigMap whose updates the watchers must each receive, every one.
	mixWatched = "watched"
)

// mixFixture is what the load of a rolling restart needs: the token exchange, and where the
// proxy serves, a namespace that pinny may list and watch through it.
type mixFixture struct {
	exchange func(context.Context) error
	// proxied says whether the proxy serves: pinny lists and watches through it.
	proxied bool
	ns      string
	admin   kubernetes.Interface
	// viaProxy is a client of pinny's through the proxy, with a certificate of its own (they
	// last 5 minutes, about as long as a rollout and its load).
	viaProxy func(ctx context.Context) kubernetes.Interface
}

func newMixFixture(ctx context.Context, t *testing.T, cfg *envconf.Config, exchange func(context.Context) error) *mixFixture {
	t.Helper()
	f := &mixFixture{exchange: exchange, proxied: proxyServes(steps.ClusterFrom(ctx).Info), admin: kubeClient(t, cfg)}
	if !f.proxied {
		return f
	}
	setUpLocalUsers(ctx, t, cfg)
	f.ns = createTestNamespace(ctx, t, cfg, "e2e-fault-mix-")
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "pinny-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "pinny"}},
	}
	if _, err := f.admin.RbacV1().RoleBindings(f.ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range mixObjects {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("object-%02d", i)}, Data: map[string]string{"i": strconv.Itoa(i)}}
		if _, err := f.admin.CoreV1().ConfigMaps(f.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	watched := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: mixWatched}, Data: map[string]string{"n": "0"}}
	if _, err := f.admin.CoreV1().ConfigMaps(f.ns).Create(ctx, watched, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	proxy := listeningProxy(ctx, t, cfg)
	ca, err := base64.StdEncoding.DecodeString(proxy.CertificateAuthorityData)
	if err != nil {
		t.Fatal(err)
	}
	f.viaProxy = func(ctx context.Context) kubernetes.Interface {
		cred := proxyExchange(ctx, t, proxy, "pinny:correct horse").Status.Credential
		if cred == nil {
			t.Fatal("no credential from the proxy for pinny")
		}
		c := benchClient(t, &rest.Config{Host: proxy.Endpoint, TLSClientConfig: rest.TLSClientConfig{
			CAData: ca, CertData: []byte(cred.ClientCertificateData), KeyData: []byte(cred.ClientKeyData),
		}})
		// RBAC takes a moment to see a new binding.
		var last error
		if err := wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, last = c.CoreV1().ConfigMaps(f.ns).List(ctx, metav1.ListOptions{})
			return last == nil, nil
		}); err != nil {
			t.Fatalf("listing ConfigMaps through the proxy as pinny: %v", last)
		}
		return c
	}
	return f
}

// mixLoad is the load of one rolling restart.
type mixLoad struct {
	exchanges, lists *load
	watches          *watchers
}

func (f *mixFixture) start(ctx context.Context, t *testing.T) *mixLoad {
	t.Helper()
	if !f.proxied {
		return &mixLoad{exchanges: startLoad(ctx, "exchanges", mixClients, f.exchange)}
	}
	c := f.viaProxy(ctx)
	list := func(ctx context.Context) error {
		l, err := c.CoreV1().ConfigMaps(f.ns).List(ctx, metav1.ListOptions{})
		if err == nil && len(l.Items) < mixObjects {
			err = fmt.Errorf("listed %d ConfigMaps, want %d or more", len(l.Items), mixObjects)
		}
		return err
	}
	return &mixLoad{
		exchanges: startLoad(ctx, "exchanges", mixClients/2, f.exchange),
		lists:     startLoad(ctx, "lists", mixClients/2, list),
		watches:   startWatchers(ctx, t, f.admin, c, f.ns),
	}
}

// stop ends the load and fails t unless no request failed, even at its first try, and every
// watcher received every update in order (a watch that ended and was watched again from the
// last event it delivered is not a failure: clients do that).
func (m *mixLoad) stop(t *testing.T, what string, fault, recovered time.Time) {
	t.Helper()
	var watched watchRecord
	if m.watches != nil {
		watched = m.watches.stop()
	}
	for _, l := range []*load{m.exchanges, m.lists} {
		if l != nil {
			l.stop().expectNoFailure(t, what, fault, recovered)
		}
	}
	if m.watches != nil {
		watched.expectEveryUpdate(t, what)
	}
}

// watchers hold watches on the mixWatched ConfigMap while a writer updates it every 100 ms.
type watchers struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	writer sync.WaitGroup
	mu     sync.Mutex
	// first is the update the ConfigMap had when the watches began; written the last since.
	first, written int
	seen           [mixWatchers][]int
	ends           [mixWatchers]int
	errs           []error
	stopped        chan struct{}
}

func startWatchers(ctx context.Context, t *testing.T, admin, c kubernetes.Interface, ns string) *watchers {
	t.Helper()
	cm, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, mixWatched, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := strconv.Atoi(cm.Data["n"])
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &watchers{cancel: cancel, first: first, written: first, stopped: make(chan struct{})}
	rv := cm.ResourceVersion
	for i := range mixWatchers {
		w.wg.Go(func() { w.watch(ctx, c, ns, i, rv) })
	}
	w.writer.Go(func() {
		for {
			select {
			case <-w.stopped:
				return
			case <-time.After(100 * time.Millisecond):
			}
			w.mu.Lock()
			n := w.written + 1
			w.mu.Unlock()
			cm.Data["n"] = strconv.Itoa(n)
			updated, err := admin.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
			if err != nil {
				w.fail(fmt.Errorf("updating the watched ConfigMap (direct, as the administrator): %w", err))
				return
			}
			cm = updated
			w.mu.Lock()
			w.written = n
			w.mu.Unlock()
		}
	})
	return w
}

func (w *watchers) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, err)
}

// watch watches from rv, and again from the last event it received whenever a watch ends, as
// client-go's reflectors do; an error opening a watch is retried once, after half a second.
func (w *watchers) watch(ctx context.Context, c kubernetes.Interface, ns string, i int, rv string) {
	open := func() (watch.Interface, error) {
		return c.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + mixWatched, ResourceVersion: rv})
	}
	for ctx.Err() == nil {
		ww, err := open()
		if err != nil && ctx.Err() == nil {
			time.Sleep(500 * time.Millisecond)
			ww, err = open()
		}
		if err != nil {
			if ctx.Err() == nil {
				w.fail(fmt.Errorf("watcher %d: watching from %s, twice: %w", i, rv, err))
			}
			return
		}
		for ev := range ww.ResultChan() {
			switch ev.Type {
			case watch.Modified:
				cm := ev.Object.(*corev1.ConfigMap)
				n, err := strconv.Atoi(cm.Data["n"])
				if err != nil {
					w.fail(fmt.Errorf("watcher %d: %w", i, err))
				}
				rv = cm.ResourceVersion
				w.mu.Lock()
				w.seen[i] = append(w.seen[i], n)
				w.mu.Unlock()
			case watch.Error:
				if ctx.Err() != nil {
					return // client-go's report of the stop, not the server's
				}
				w.fail(fmt.Errorf("watcher %d: an error event: %v", i, ev.Object))
				ww.Stop()
				return
			}
		}
		if ctx.Err() == nil {
			w.mu.Lock()
			w.ends[i]++
			w.mu.Unlock()
		}
	}
}

// stop stops the writer, waits up to 30 s for every watcher to receive its last update, and
// ends the watches.
func (w *watchers) stop() watchRecord {
	close(w.stopped)
	w.writer.Wait()
	w.mu.Lock()
	last := w.written
	w.mu.Unlock()
	_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, s := range w.seen {
			if len(s) == 0 || s[len(s)-1] < last {
				return len(w.errs) > 0, nil
			}
		}
		return true, nil
	})
	w.cancel()
	w.wg.Wait()
	r := watchRecord{first: w.first, last: last, ends: w.ends, errs: w.errs}
	for i := range w.seen {
		r.seen[i] = w.seen[i]
	}
	return r
}

type watchRecord struct {
	first, last int
	seen        [mixWatchers][]int
	ends        [mixWatchers]int
	errs        []error
}

func (r watchRecord) expectEveryUpdate(t *testing.T, what string) {
	t.Helper()
	t.Logf("%d watchers through the proxy, %d updates: watches ended and watched again %v times", mixWatchers, r.last-r.first, r.ends)
	for _, err := range r.errs {
		t.Errorf("%s: %v", what, err)
	}
	for i, s := range r.seen {
		for j, n := range s {
			if n != r.first+j+1 {
				t.Errorf("%s: watcher %d received update %d where update %d was due: an update was lost or repeated", what, i, n, r.first+j+1)
				break
			}
		}
		if len(s) != r.last-r.first {
			t.Errorf("%s: watcher %d received %d of the %d updates", what, i, len(s), r.last-r.first)
		}
	}
}
