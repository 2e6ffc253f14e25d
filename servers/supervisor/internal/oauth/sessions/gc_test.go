package sessions

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"

	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/oauth/sessions/sessionstest"
)

func TestGarbageCollect(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	secret := func(name string, typ corev1.SecretType, labels map[string]string, gcAfter string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels, UID: types.UID(name + "-uid"), ResourceVersion: "7"}, Type: typ}
		if gcAfter != "" {
			s.Annotations = map[string]string{GarbageCollectAfterAnnotation: gcAfter}
		}
		return s
	}
	stored := map[string]string{TypeLabel: typeAccessToken}
	past, future := now.Add(-time.Second).Format(time.RFC3339), now.Add(time.Second).Format(time.RFC3339)
	clientset := fake.NewClientset(
		secret("expired", SecretType(typeAccessToken), stored, past),
		secret("live", SecretType(typeAccessToken), stored, future),
		secret("no-annotation", SecretType(typeAccessToken), stored, ""),
		secret("bad-annotation", SecretType(typeAccessToken), stored, "tomorrow"),
		// Pinniped's collector goes by the annotation alone: an expired Secret of any type and
		// labels is deleted, as one that a Pinniped Supervisor wrote during a rolling migration.
		secret("unlabeled", SecretType(typeAccessToken), nil, past),
		secret("other-type", corev1.SecretTypeOpaque, stored, past),
		secret("annotation-only", corev1.SecretTypeOpaque, nil, past),
		secret("annotation-only-live", corev1.SecretTypeOpaque, nil, future),
		secret("unannotated", corev1.SecretTypeOpaque, nil, ""),
	)
	var log bytes.Buffer
	s := NewStorage(clientset.CoreV1().Secrets(namespace), noConnectors{}, sessionstest.Keys()).WithAudit(audit.New(&log, false))
	s.now = func() time.Time { return now }

	RegisterMetrics() // component-base metrics count nothing until registered
	collectedBefore, _ := testutil.GetCounterMetricValue(gcCollected)
	runsBefore, _ := testutil.GetCounterMetricValue(gcRuns.WithLabelValues("success"))
	n, err := s.GarbageCollect(context.Background())
	if err != nil || n != 4 {
		t.Fatalf("GarbageCollect() = %d, %v; want 4 deleted", n, err)
	}
	// The sweep is counted, with what it deleted and the records that stay: of our types only,
	// whether they expire later, cannot say when, or never.
	collected, _ := testutil.GetCounterMetricValue(gcCollected)
	runs, _ := testutil.GetCounterMetricValue(gcRuns.WithLabelValues("success"))
	live, _ := testutil.GetGaugeMetricValue(liveRecords.WithLabelValues(typeAccessToken))
	if collected-collectedBefore != 4 || runs-runsBefore != 1 || live != 3 {
		t.Errorf("metrics: %v collected, %v sweeps, %v live access-token records; want 4, 1, 3", collected-collectedBefore, runs-runsBefore, live)
	}
	// A type without a record is served as 0, not left out.
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(`
# HELP pinniped_supervisor_session_records [ALPHA] Session records (Secrets) not yet expired, by storage type, as the leading replica's last complete sweep found them: oidc counts logins, refresh-token their current and retired refresh tokens.
# TYPE pinniped_supervisor_session_records gauge
pinniped_supervisor_session_records{type="access-token"} 3
pinniped_supervisor_session_records{type="authcode"} 0
pinniped_supervisor_session_records{type="device"} 0
pinniped_supervisor_session_records{type="oidc"} 0
pinniped_supervisor_session_records{type="pkce"} 0
pinniped_supervisor_session_records{type="refresh-token"} 0
`), "pinniped_supervisor_session_records"); err != nil {
		t.Error(err)
	}
	// Secrets without a readable record are deleted without an audit event (TestGarbageCollectAudit).
	if got := log.String(); got != "" {
		t.Errorf("audit events:\n%s", got)
	}
	// A deletion holds only for the Secret as it was listed: one used or replaced since stays.
	for _, action := range clientset.Actions() {
		if del, ok := action.(k8stesting.DeleteAction); ok {
			if pre := del.GetDeleteOptions().Preconditions; pre == nil || pre.UID == nil || *pre.UID != types.UID(del.GetName()+"-uid") ||
				pre.ResourceVersion == nil || *pre.ResourceVersion != "7" {
				t.Errorf("deleting %s with preconditions %+v; want its listed UID and resourceVersion", del.GetName(), pre)
			}
		}
	}
	list, err := clientset.CoreV1().Secrets(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, s := range list.Items {
		left = append(left, s.Name)
	}
	slices.Sort(left)
	if want := []string{"annotation-only-live", "bad-annotation", "live", "no-annotation", "unannotated"}; !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
}

func TestRunGarbageCollectorSweepsAtOnce(t *testing.T) {
	expired := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: "expired", Namespace: namespace, Labels: map[string]string{TypeLabel: typeAccessToken},
			Annotations: map[string]string{GarbageCollectAfterAnnotation: time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)},
		},
		Type: SecretType(typeAccessToken),
	}
	clientset := fake.NewClientset(expired)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		NewStorage(clientset.CoreV1().Secrets(namespace), noConnectors{}, sessionstest.Keys()).RunGarbageCollector(ctx, func() bool { return true })
	}()
	defer func() {
		cancel()
		<-done
	}()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := clientset.CoreV1().Secrets(namespace).Get(ctx, "expired", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("the expired Secret was not collected well before the first interval: %v", err)
	}
}

// A replica that does not lead leaves the sweeps to the one that does: it neither reads nor
// deletes, so it neither revokes nor counts failed revocations.
func TestRunGarbageCollectorSweepsOnlyWhenLeading(t *testing.T) {
	expired := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: "expired", Namespace: namespace, Labels: map[string]string{TypeLabel: typeAccessToken},
			Annotations: map[string]string{GarbageCollectAfterAnnotation: time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)},
		},
		Type: SecretType(typeAccessToken),
	}
	clientset := fake.NewClientset(expired)
	asked := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		NewStorage(clientset.CoreV1().Secrets(namespace), noConnectors{}, sessionstest.Keys()).RunGarbageCollector(ctx, func() bool {
			close(asked) // the first sweep's question; the next comes after GarbageCollectInterval
			return false
		})
	}()
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the garbage collector never asked whether it leads")
	}
	cancel()
	<-done
	if actions := clientset.Actions(); len(actions) != 0 {
		t.Errorf("a replica that does not lead sent %d requests, want none: %v", len(actions), actions)
	}
}

// Each collected record of a login that was or could be redeemed is audited with Pinniped's event,
// the login's session ID and the record's storage type; PKCE and OpenID Connect records are not.
func TestGarbageCollectAudit(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clientset := fake.NewClientset()
	store, req := formatFixture(clientset, now)
	req.Session.(*Session).Custom.Session = connectors.Session{} // nothing to revoke upstream
	for _, err := range []error{
		store.CreateAuthorizeCodeSession(ctx, "code-sig", req), store.CreateAccessTokenSession(ctx, "access-sig", req),
		store.CreateRefreshTokenSession(ctx, "refresh-sig", "", req), store.CreatePKCERequestSession(ctx, "code-sig", req),
		store.CreateOpenIDConnectSession(ctx, "code-sig", req),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	store.WithAudit(audit.New(&log, false))
	store.now = func() time.Time { return now.Add(MaxRecordLifetime + time.Minute) }
	if n, err := store.GarbageCollect(ctx); n != 5 || err != nil {
		t.Fatalf("GarbageCollect() = %d, %v; want 5 deleted", n, err)
	}
	got := log.String()
	for _, kind := range []string{typeAuthcode, typeAccessToken, typeRefreshToken} {
		if want := `"message":"Session Garbage Collected","auditEvent":true,"sessionID":"login-1","storageType":"` + kind + `"}`; !strings.Contains(got, want) {
			t.Errorf("no event %s in\n%s", want, got)
		}
	}
	if strings.Count(got, "\n") != 3 {
		t.Errorf("audit events:\n%s\nwant three", got)
	}
}

// A sweep lists the Secrets a page at a time, and collects every page; when the list's
// continuation has expired (a long sweep outlived etcd's compaction), it stops without an error,
// and the next sweep collects the rest.
func TestGarbageCollectPages(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	past := now.Add(-time.Second).Format(time.RFC3339)
	const total = 2*gcPageSize + 17
	var objects []runtime.Object
	for i := range total {
		objects = append(objects, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("expired-%04d", i), Namespace: namespace, Annotations: map[string]string{GarbageCollectAfterAnnotation: past},
		}})
	}
	for _, expireAfterPages := range []int{0, 1} {
		clientset := fake.NewClientset(objects...)
		var all []corev1.Secret
		pages := 0
		// The fake lists everything at once: this serves the listing as the API server pages it,
		// from the Secrets as they were before the sweep.
		clientset.PrependReactor("list", "secrets", func(action k8stesting.Action) (bool, runtime.Object, error) {
			opts := action.(k8stesting.ListActionImpl).ListOptions
			if opts.Limit != gcPageSize {
				t.Errorf("listed with limit %d, want %d", opts.Limit, gcPageSize)
			}
			if opts.Continue == "" {
				list, err := clientset.Tracker().List(corev1.SchemeGroupVersion.WithResource("secrets"), corev1.SchemeGroupVersion.WithKind("Secret"), namespace)
				if err != nil {
					return true, nil, err
				}
				all = list.(*corev1.SecretList).Items
			} else if expireAfterPages > 0 && pages >= expireAfterPages {
				return true, nil, apierrors.NewResourceExpired("the continue token has expired")
			}
			from, _ := strconv.Atoi(opts.Continue)
			to := min(from+gcPageSize, len(all))
			pages++
			page := &corev1.SecretList{Items: all[from:to]}
			if to < len(all) {
				page.Continue = strconv.Itoa(to)
			}
			return true, page, nil
		})
		s := NewStorage(clientset.CoreV1().Secrets(namespace), noConnectors{}, sessionstest.Keys())
		s.now = func() time.Time { return now }
		n, err := s.GarbageCollect(context.Background())
		want := total
		if expireAfterPages > 0 {
			want = expireAfterPages * gcPageSize
		}
		if err != nil || n != want {
			t.Errorf("continuation expiring after %d pages: GarbageCollect() = %d, %v; want %d deleted", expireAfterPages, n, err, want)
		}
	}
}
