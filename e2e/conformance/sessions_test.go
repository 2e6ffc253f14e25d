package conformance

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/yaml"

	"sealion.dev/e2e/steps"
	"sealion.dev/fixtures/ldap"
)

// sessionEndsIn is how long pinniped whoami says the session has left.
var sessionEndsIn = regexp.MustCompile(`Session ends: \S+ \(in ([0-9hms.]+)\)`)

// TestSupervisorSessionPolicy: a FederationDomain's session lifetimes (spec.sessionLifetimes, 90
// seconds at most and 60 idle) as kubectl users live them through the CLI. At the login the CLI
// warns that the session ends soon, and pinniped whoami says when. A session refreshed within
// its idle timeout goes on; one left idle ends, its cached access token refused at the token
// exchange; one kept busy ends at its maximum length. Each time the CLI says why and logs in
// again. Then pinniped logout ends a session: its refresh token is refused at the Supervisor, and
// kubectl logs in anew. Last, an administrator's SessionRevocation of the user ends that session
// too, with an audit event, and the user can log in again.
func TestSupervisorSessionPolicy(t *testing.T) {
	const (
		fdName    = "sessions"
		lifetimes = "  sessionLifetimes: {maxSessionSeconds: 90, idleTimeoutSeconds: 60}\n"
	)
	var (
		fl                   *federatedLogin
		idle, busy           cliUser
		idleLogin, busyLogin time.Time
	)
	f := features.New("session lifetimes through the Supervisor").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			host := supervisorHost(ctx, t, cfg)
			directory, err := steps.StartLDAPForCluster(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = directory.Close() })
			createLDAPIDP(ctx, t, cfg, "sessions-ldap", directory.LDAPSAddress, directory)
			fl = federateWith(ctx, t, cfg, host, fdName, federationIDP("sessions-ldap", "LDAPIdentityProvider", "sessions-ldap", ""), lifetimes)
			bindGroup(ctx, t, cfg, "e2e-supervisor-sessions-seals", "seals")
			cond, err := steps.Kubectl(ctx, cfg.KubeconfigFile(), "", "get", "-n", underTest(ctx).Supervisor.Namespace, "federationdomain/"+fdName,
				"-o", `jsonpath={.status.conditions[?(@.type=="SessionLifetimesValid")].message}`)
			if want := "sessions last at most 1m30s, or until idle for 1m0s"; err != nil || cond != want {
				t.Errorf("SessionLifetimesValid: %q (%v), want %q", cond, err, want)
			}
			password := "PINNIPED_PASSWORD=" + ldap.DefaultUsers[0].Password
			idle = fl.user(ctx, t, "sessions-ldap", "cli_password", "PINNIPED_USERNAME=pinny", password)
			busy = fl.user(ctx, t, "sessions-ldap", "cli_password", "PINNIPED_USERNAME=pinny", password)
			return ctx
		}).
		Assess("at the login the CLI warns that the session ends soon, and whoami says when", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			idleLogin = loginWarned(ctx, t, idle, fl.issuer)
			busyLogin = loginWarned(ctx, t, busy, fl.issuer)
			out, err := busy.pinniped(ctx, "whoami", "--api-group-suffix", busy.apiGroupSuffix)
			m := sessionEndsIn.FindStringSubmatch(out)
			if err != nil || m == nil || !strings.Contains(out, "Issuer: "+fl.issuer) {
				t.Fatalf("whoami: %v\n%s\nwant the session's issuer and end", err, out)
			}
			if left, err := time.ParseDuration(m[1]); err != nil || left <= 0 || left > 90*time.Second {
				t.Errorf("whoami says the session ends in %s, want within the 90 seconds of the policy", m[1])
			}
			return ctx
		}).
		Assess("a session refreshed within its idle timeout goes on", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			sleepUntil(ctx, t, busyLogin.Add(40*time.Second))
			stderr := refreshAndRun(ctx, t, busy)
			if !strings.Contains(stderr, "refreshing the session with its refresh token") || strings.Contains(stderr, "has ended") {
				t.Errorf("kubectl 40 s after the login: want a refresh, and the session going on:\n%s", stderr)
			}
			return ctx
		}).
		Assess("a session idle for a minute ends: its access token is refused, and the CLI says why and logs in again", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			sleepUntil(ctx, t, idleLogin.Add(65*time.Second))
			// Only the cluster credential is aged: the access token cached at the login is still
			// within its two minutes, and the token exchange refuses it.
			idle.expireCachedCredentials(t)
			expectSessionEnded(ctx, t, idle, fl.issuer, "the session was idle for more than 1m0s")
			return ctx
		}).
		Assess("a session kept busy ends at its maximum length", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// Its last refresh was 40 s after the login: at 93 s its idle time is not over.
			sleepUntil(ctx, t, busyLogin.Add(93*time.Second))
			busy.expireCachedCredentials(t)
			busy.expireSessions(t)
			expectSessionEnded(ctx, t, busy, fl.issuer, "the session reached its maximum length of 1m30s")
			return ctx
		}).
		Assess("pinniped logout ends the session at the Supervisor and on this machine", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			refreshToken := busy.cachedRefreshToken(t)
			out, err := busy.pinniped(ctx, "logout")
			if want := "Logged out of " + fl.issuer; err != nil || !strings.Contains(out, want) {
				t.Fatalf("pinniped logout: %v\n%s\nwant %q", err, out, want)
			}
			// The refresh token the CLI held is refused, wherever it was copied to.
			fl.expectRefreshRefused(t, "the logged-out session's", refreshToken)
			// kubectl logs in again, with no refresh to try and no cached credential.
			_, stderr, err := busy.kubectlOutput(ctx, "get", "pods", "-n", "kube-system")
			if err != nil || !strings.Contains(stderr, "logging in with the cli_password flow") || strings.Contains(stderr, "refreshing the session") {
				t.Errorf("kubectl after the logout: %v; want a new login, without a refresh:\n%s", err, stderr)
			}
			return ctx
		}).
		Assess("an administrator's SessionRevocation ends the sessions of a logged-in user, and audits it", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			refreshToken := busy.cachedRefreshToken(t)
			supervisor := underTest(ctx).Supervisor
			revocation := `apiVersion: config.supervisor.pinniped.dev/v1alpha1
kind: SessionRevocation
metadata: {name: e2e-leaver, namespace: ` + supervisor.Namespace + `}
spec:
  federationDomainName: ` + fdName + `
  usernames: [pinny]
  reason: the e2e user left
`
			created := time.Now()
			if _, err := steps.Kubectl(ctx, cfg.KubeconfigFile(), revocation, "apply", "-f", "-"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_, _ = steps.Kubectl(context.WithoutCancel(ctx), cfg.KubeconfigFile(), "", "delete", "--ignore-not-found", "-n", supervisor.Namespace, "sessionrevocation/e2e-leaver")
			})
			waitForPhase(ctx, t, cfg, "sessionrevocation/e2e-leaver")
			t.Logf("the Supervisor ended the stored sessions %v after the SessionRevocation was applied", time.Since(created).Round(time.Millisecond))
			// The idle and the busy user's live sessions, and any ended session not yet collected.
			revoked, err := steps.Kubectl(ctx, cfg.KubeconfigFile(), "", "get", "-n", supervisor.Namespace, "sessionrevocation/e2e-leaver", "-o", "jsonpath={.status.revokedSessions}")
			if n, _ := strconv.Atoi(revoked); err != nil || n < 2 {
				t.Errorf("status.revokedSessions = %q (%v), want the two users' sessions at least", revoked, err)
			}

			// The refresh token the CLI holds is refused.
			fl.expectRefreshRefused(t, "the revoked session's", refreshToken)

			// The leader's audit log says which object ended which session, and why.
			logs, err := steps.Kubectl(ctx, cfg.KubeconfigFile(), "", "logs", "-n", supervisor.Namespace, "--tail=-1", "-l", labels.SelectorFromSet(supervisor.Pods).String())
			if event := `"message":"Session Revoked By Administrator"`; err != nil || !strings.Contains(logs, event) ||
				!strings.Contains(logs, `"sessionRevocation":"e2e-leaver","reason":"the e2e user left"`) {
				t.Errorf("the Supervisor's logs (%v) lack the audit event %s of e2e-leaver", err, event)
			}

			// kubectl, whose cached access token is refused, says the session ended and logs in
			// again; that login is a new session, which the revocation does not end.
			sleepUntil(ctx, t, created.Add(2*time.Second))
			busy.expireCachedCredentials(t)
			_, stderr, err := busy.kubectlOutput(ctx, "get", "pods", "-n", "kube-system")
			if err != nil || !strings.Contains(stderr, "Your session at "+fl.issuer+" has ended: ") || !strings.Contains(stderr, "logging in with the cli_password flow") {
				t.Errorf("kubectl after the revocation: %v; want the session's end said, and a new login:\n%s", err, stderr)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// expectRefreshRefused checks that the Supervisor refuses refreshToken, the refresh token of
// whose session, with invalid_grant.
func (fl *federatedLogin) expectRefreshRefused(t *testing.T, whose, refreshToken string) {
	t.Helper()
	client, err := fl.httpClient()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.PostForm(fl.issuer+"/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}, "client_id": {"pinniped-cli"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"invalid_grant"`) {
		t.Errorf("refresh with %s refresh token: %s %s, want invalid_grant", whose, resp.Status, body)
	}
}

// cachedRefreshToken is the refresh token of u's only cached session.
func (u cliUser) cachedRefreshToken(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(u.sessionCache)
	if err != nil {
		t.Fatalf("the session cache: %v", err)
	}
	var f struct {
		Sessions []struct {
			Tokens struct {
				Refresh struct {
					Token string `json:"token"`
				} `json:"refresh"`
			} `json:"tokens"`
		} `json:"sessions"`
	}
	if err := yaml.Unmarshal(raw, &f); err != nil || len(f.Sessions) != 1 || f.Sessions[0].Tokens.Refresh.Token == "" {
		t.Fatalf("the session cache holds no single session with a refresh token (%v):\n%s", err, raw)
	}
	return f.Sessions[0].Tokens.Refresh.Token
}

// loginWarned runs u's first kubectl, which logs in, checks that the CLI warned that the session
// ends soon, and returns when the login was over: the session started before.
func loginWarned(ctx context.Context, t *testing.T, u cliUser, issuer string) time.Time {
	t.Helper()
	var stderr string
	eventually(ctx, t, func() error {
		var err error
		_, stderr, err = u.kubectlOutput(ctx, "get", "pods", "-n", "kube-system")
		return err
	})
	if !strings.Contains(stderr, "Your session at "+issuer+" ends at ") {
		t.Errorf("the login did not warn that the session ends within minutes:\n%s", stderr)
	}
	return time.Now()
}

// expectSessionEnded runs kubectl as u and checks that the CLI said the session ended, for why,
// and logged in again (u's password is in its environment).
func expectSessionEnded(ctx context.Context, t *testing.T, u cliUser, issuer, why string) {
	t.Helper()
	out, stderr, err := u.kubectlOutput(ctx, "get", "pods", "-n", "kube-system")
	if err != nil {
		t.Fatalf("kubectl after the session ended: %v\n%s%s", err, out, stderr)
	}
	if want := "Your session at " + issuer + " has ended: " + why + ". Logging in again."; !strings.Contains(stderr, want) {
		t.Errorf("kubectl's stderr lacks %q:\n%s", want, stderr)
	}
	if !strings.Contains(stderr, "logging in with the cli_password flow") {
		t.Errorf("no new login after the session ended:\n%s", stderr)
	}
}

// sleepUntil waits until when, or fails the test when ctx ends first.
func sleepUntil(ctx context.Context, t *testing.T, when time.Time) {
	t.Helper()
	select {
	case <-time.After(time.Until(when)):
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
}
