package sessionrevocation

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	supervisorfake "sealion.dev/core/generated/supervisor/clientset/versioned/fake"
	supervisorinformers "sealion.dev/core/generated/supervisor/informers/externalversions"
	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
)

const namespace = "supervisor"

// fakeSessions ends the stored sessions it is given that match, as sessions.Storage would, and
// fails with err after ending them.
type fakeSessions struct {
	stored []*sessions.Session
	calls  int
	err    error
}

func (f *fakeSessions) EndSessions(_ context.Context, match func(*sessions.Session) bool) ([]sessions.EndedSession, error) {
	f.calls++
	var ended []sessions.EndedSession
	var left []*sessions.Session
	for _, s := range f.stored {
		if match(s) {
			ended = append(ended, sessions.EndedSession{RequestID: "login-of-" + s.Custom.Username, Username: s.Custom.Username})
		} else {
			left = append(left, s)
		}
	}
	f.stored = left
	return ended, f.err
}

func storedSession(username, fd string) *sessions.Session {
	s := sessions.NewSession()
	s.Custom.Username, s.Custom.FederationDomain = username, fd
	return s
}

type fixture struct {
	c        *Controller
	client   *supervisorfake.Clientset
	sessions *fakeSessions
	leading  bool
	log      bytes.Buffer
	// cache is the informer's cache of SessionRevocations.
	cache cache.Indexer
}

func newFixture(t *testing.T, rev *configv1alpha1.SessionRevocation, objs ...*configv1alpha1.FederationDomain) *fixture {
	t.Helper()
	f := &fixture{client: supervisorfake.NewSimpleClientset(rev), leading: true, sessions: &fakeSessions{stored: []*sessions.Session{
		storedSession("pinny", "prod"), storedSession("pinny", "dev"), storedSession("walrus", "prod"),
	}}}
	informers := supervisorinformers.NewSharedInformerFactory(f.client, 0).Config().V1alpha1()
	f.cache = informers.SessionRevocations().Informer().GetIndexer()
	if err := f.cache.Add(rev); err != nil {
		t.Fatal(err)
	}
	for _, fd := range objs {
		if err := informers.FederationDomains().Informer().GetIndexer().Add(fd); err != nil {
			t.Fatal(err)
		}
	}
	f.c = New(Config{Namespace: namespace, Supervisor: f.client, Sessions: f.sessions, Leading: func() bool { return f.leading },
		Audit: audit.New(&f.log, false)}, Informers{SessionRevocations: informers.SessionRevocations(), FederationDomains: informers.FederationDomains()})
	return f
}

func (f *fixture) status(t *testing.T) configv1alpha1.SessionRevocationStatus {
	t.Helper()
	rev, err := f.client.ConfigV1alpha1().SessionRevocations(namespace).Get(context.Background(), "leaver", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rev.Status
}

func revocation(spec configv1alpha1.SessionRevocationSpec) *configv1alpha1.SessionRevocation {
	return &configv1alpha1.SessionRevocation{ObjectMeta: metav1.ObjectMeta{Name: "leaver", Namespace: namespace, Generation: 2,
		CreationTimestamp: metav1.Now()}, Spec: spec}
}

// The leader ends the stored sessions a SessionRevocation matches, audits each with the object's
// name and reason, and counts them; it does so once per generation.
func TestEndsMatchingSessionsOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, revocation(configv1alpha1.SessionRevocationSpec{FederationDomainName: "prod", Usernames: []string{"pinny"}, Reason: "left the company"}),
		&configv1alpha1.FederationDomain{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: namespace}})
	if err := f.c.sync(ctx, "leaver"); err != nil {
		t.Fatal(err)
	}
	status := f.status(t)
	if status.RevokedSessions != 1 || status.Phase != configv1alpha1.PhaseReady || len(f.sessions.stored) != 2 {
		t.Errorf("status %+v with %d sessions left; want pinny's session of prod ended, Ready", status, len(f.sessions.stored))
	}
	for _, typ := range []string{configv1alpha1.ConditionFederationDomainFound, configv1alpha1.ConditionSessionsRevoked} {
		if cond := meta.FindStatusCondition(status.Conditions, typ); cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != 2 {
			t.Errorf("condition %s = %+v, want true for generation 2", typ, cond)
		}
	}
	event := `"message":"Session Revoked By Administrator","auditEvent":true,"sessionID":"login-of-pinny","personalInfo":{"username":"redacted"},"sessionRevocation":"leaver","reason":"left the company"}`
	if got := f.log.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, event) {
		t.Errorf("audit log %q, want one event %s", got, event)
	}

	// The informer brings the written status; the same generation is not looked at again.
	rev, _ := f.client.ConfigV1alpha1().SessionRevocations(namespace).Get(ctx, "leaver", metav1.GetOptions{})
	if err := f.cache.Update(rev); err != nil {
		t.Fatal(err)
	}
	if err := f.c.sync(ctx, "leaver"); err != nil || f.sessions.calls != 1 {
		t.Errorf("a second sync: %v, %d passes over the sessions; want only the first", err, f.sessions.calls)
	}
}

// Only the leader ends stored sessions and writes: the other replicas only refuse them.
func TestFollowerDoesNothing(t *testing.T) {
	f := newFixture(t, revocation(configv1alpha1.SessionRevocationSpec{}))
	f.leading = false
	if err := f.c.sync(context.Background(), "leaver"); err != nil {
		t.Fatal(err)
	}
	if f.sessions.calls != 0 || f.status(t).Phase != "" {
		t.Errorf("a follower made %d passes and wrote %+v", f.sessions.calls, f.status(t))
	}
}

// A FederationDomain that does not exist, and a pass that failed part way, show in the status;
// the failure is retried.
func TestStatusSaysWhatFailed(t *testing.T) {
	f := newFixture(t, revocation(configv1alpha1.SessionRevocationSpec{FederationDomainName: "prod"}))
	f.sessions.err = errors.New("listing the stored sessions: etcdserver: request timed out")
	if err := f.c.sync(context.Background(), "leaver"); err == nil {
		t.Error("a failed pass is not retried")
	}
	status := f.status(t)
	fd := meta.FindStatusCondition(status.Conditions, configv1alpha1.ConditionFederationDomainFound)
	revoked := meta.FindStatusCondition(status.Conditions, configv1alpha1.ConditionSessionsRevoked)
	if status.Phase != configv1alpha1.PhaseError || status.RevokedSessions != 2 ||
		fd == nil || fd.Reason != configv1alpha1.ReasonFederationDomainNotFound ||
		revoked == nil || revoked.Reason != configv1alpha1.ReasonRevocationFailed || !strings.Contains(revoked.Message, "ended 2 stored sessions") {
		t.Errorf("status %+v", status)
	}
}
