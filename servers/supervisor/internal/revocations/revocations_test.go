package revocations

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
)

func TestMatches(t *testing.T) {
	created := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	session := func(login time.Time) *sessions.Session {
		s := sessions.NewSession()
		s.Custom.Username, s.Custom.Groups, s.Custom.LoginTime = "pinny", []string{"seals", "walruses"}, login
		return s
	}
	before, sameSecond, after := created.Add(-time.Hour), created.Add(999*time.Millisecond), created.Add(time.Second)
	for _, tc := range []struct {
		name string
		spec configv1alpha1.SessionRevocationSpec
		fd   string
		s    *sessions.Session
		want bool
	}{
		{name: "everything before the object", s: session(before), want: true},
		{name: "a login in the second the object was created", s: session(sameSecond), want: true},
		{name: "a login after the object", s: session(after)},
		{name: "a session that does not know its login time", s: session(time.Time{}), want: true},
		{name: "startedBefore, a login before it", spec: configv1alpha1.SessionRevocationSpec{StartedBefore: &metav1.Time{Time: after.Add(time.Minute)}}, s: session(after), want: true},
		{name: "startedBefore, a login at it", spec: configv1alpha1.SessionRevocationSpec{StartedBefore: &metav1.Time{Time: before}}, s: session(before)},
		{name: "the username", spec: configv1alpha1.SessionRevocationSpec{Usernames: []string{"walrus", "pinny"}}, s: session(before), want: true},
		{name: "the username in another case", spec: configv1alpha1.SessionRevocationSpec{Usernames: []string{"Pinny"}}, s: session(before)},
		{name: "a group", spec: configv1alpha1.SessionRevocationSpec{Groups: []string{"walruses"}}, s: session(before), want: true},
		{name: "another user and group", spec: configv1alpha1.SessionRevocationSpec{Usernames: []string{"walrus"}, Groups: []string{"admins"}}, s: session(before)},
		{name: "the FederationDomain", spec: configv1alpha1.SessionRevocationSpec{FederationDomainName: "prod"}, fd: "prod", s: session(before), want: true},
		{name: "another FederationDomain", spec: configv1alpha1.SessionRevocationSpec{FederationDomainName: "prod"}, fd: "dev", s: session(before)},
		{name: "a FederationDomain the session does not know", spec: configv1alpha1.SessionRevocationSpec{FederationDomainName: "prod"}, s: session(before)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rev := &configv1alpha1.SessionRevocation{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}, Spec: tc.spec}
			if got := Matches(rev, tc.fd, tc.s); got != tc.want {
				t.Errorf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNilCheckerEndsNothing(t *testing.T) {
	if (*Checker)(nil).Ended("fd", sessions.NewSession()) {
		t.Error("a nil Checker ended a session")
	}
}
