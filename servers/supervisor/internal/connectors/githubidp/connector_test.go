package githubidp

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/connectors"
)

// TestOpen opens objects with a dial that reaches hosts named good...: a working host is dialed
// once per inputs, a failing one at every opening, an invalid one never.
func TestOpen(t *testing.T) {
	client := &corev1.Secret{Type: ClientSecretType, Data: map[string][]byte{ClientIDKey: []byte("id"), ClientSecretKey: []byte("shh")}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	caches := map[string]*connectors.ProbeCache{}
	dials := 0
	flakyDown := false
	dial := func(_ context.Context, address string, _ []byte, _ connectors.Settings) error {
		dials++
		if strings.HasPrefix(address, "good") || strings.HasPrefix(address, "flaky") && !flakyDown {
			return nil
		}
		if flakyDown {
			return &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		}
		return errors.New("connection refused")
	}
	openIDP := func(name, host string) (connectors.Connector, []metav1.Condition) {
		t.Helper()
		if caches[name] == nil {
			caches[name] = connectors.NewProbeCache(func() time.Time { return now })
		}
		idp := &idpv1alpha1.GitHubIdentityProvider{
			ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
			Spec: idpv1alpha1.GitHubIdentityProviderSpec{
				GitHubAPI:           idpv1alpha1.GitHubAPIConfig{Host: ptr(host)},
				AllowAuthentication: idpv1alpha1.GitHubAllowAuthenticationSpec{Organizations: idpv1alpha1.GitHubOrganizationsSpec{Allowed: []string{"seals"}}},
				Client:              idpv1alpha1.GitHubClientSpec{SecretName: "github"},
			},
		}
		in := connectors.Inputs{
			Secret:   func(string) (*corev1.Secret, error) { return client, nil },
			CABundle: func(string, *idpv1alpha1.TLSSpec) ([]byte, error) { return nil, nil },
			Probes:   caches[name],
		}
		c, conds, err := open(context.Background(), idp, in, dial)
		if err != nil {
			t.Fatal(err)
		}
		return c, conds
	}
	conn := idpv1alpha1.ConditionGitHubConnectionValid
	for range 2 {
		ready, conds := openIDP("ready", "good.ghe.example")
		if ready == nil || len(conds) != 6 || connectors.PhaseOf(conds) != idpv1alpha1.PhaseReady {
			t.Errorf("ready: connector %v, conditions %+v; want a connector and 6 true conditions", ready, conds)
		}
		down, conds := openIDP("down", "down.ghe.example")
		if down != nil || conds[5].Type != conn || conds[5].Reason != idpv1alpha1.ReasonUnableToDialServer {
			t.Errorf("down: connector %v, conditions %+v; want none, GitHubConnectionValid UnableToDialServer", down, conds)
		}
		badHost, conds := openIDP("bad-host", "https://ghe.example/path")
		if badHost != nil || conds[3].Reason != ReasonInvalidHost || conds[5].Type != conn || conds[5].Status != metav1.ConditionUnknown {
			t.Errorf("bad-host: connector %v, conditions %+v; want none, HostValid False, GitHubConnectionValid Unknown", badHost, conds)
		}
	}
	if dials != 3 {
		t.Errorf("%d dials over two openings, want 3 (the working one is cached)", dials)
	}

	// A host that refuses connections after a successful dial keeps its connector.
	if c, _ := openIDP("flaky", "flaky.ghe.example"); c == nil {
		t.Fatal("flaky: no connector while it answers")
	}
	caches["flaky"].Expire()
	flakyDown = true
	if c, conds := openIDP("flaky", "flaky.ghe.example"); c == nil || conds[5].Type != conn || conds[5].Status != metav1.ConditionFalse {
		t.Errorf("flaky, refusing connections: connector %v, conditions %+v; want the connector, GitHubConnectionValid False", c, conds)
	}
}

func TestConnector(t *testing.T) {
	p, err := New(Config{ClientID: "id", ClientSecret: "shh", AllowedOrganizations: []string{"seals"}})
	if err != nil {
		t.Fatal(err)
	}
	c := NewConnector(p)
	login := connectors.Login{IDPName: "GitHub", CallbackURL: "https://supervisor.example.com/fd/callback"}
	to, err := c.AuthorizeURL(context.Background(), login, "the-state", connectors.BrowserSecrets{Nonce: "n", PKCEVerifier: "v"})
	if err != nil || !strings.HasPrefix(to, "https://github.com/login/oauth/authorize?") ||
		!strings.Contains(to, "redirect_uri=https%3A%2F%2Fsupervisor.example.com%2Ffd%2Fcallback") || !strings.Contains(to, "state=the-state") {
		t.Errorf("AuthorizeURL = %q, %v", to, err)
	}
	var refusal *connectors.Error
	if _, err := c.Refresh(context.Background(), login, connectors.Identity{}); !errors.As(err, &refusal) || refusal.Hint != "the session holds no GitHub access token" {
		t.Errorf("Refresh without a token = %v, want a refusal", err)
	}

	// A GitHub that refuses connections refuses no one: the session stays valid for later.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()
	p, err = New(Config{Host: closed, ClientID: "id", ClientSecret: "shh", AllowedOrganizations: []string{"seals"}})
	if err != nil {
		t.Fatal(err)
	}
	session := connectors.Identity{Subject: "sub", Session: connectors.Session{GitHub: &connectors.GitHubSession{UpstreamAccessToken: "token"}}}
	if _, err := NewConnector(p).Refresh(context.Background(), login, session); !errors.As(err, &refusal) || !refusal.Unavailable {
		t.Errorf("Refresh at an unreachable GitHub = %v, want Unavailable", err)
	}
}
