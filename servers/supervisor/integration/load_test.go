package integration

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/core/testing/loadrun"
	"sealion.dev/core/testing/metricstest"
	"sealion.dev/core/testing/testdeps"
	"sealion.dev/fixtures/ldap"
	"sealion.dev/servers/supervisor/internal/connectors/ldapclient"
)

var (
	load         = flag.Bool("load", false, "run the Supervisor load test: LDAP password logins and token exchanges (make bench)")
	loadDuration = flag.Duration("load-duration", 5*time.Second, "how long each load step runs")
)

const (
	// loadUsers is how many LDAP users the logins rotate through, so that a per-user limit on
	// password logins does not decide the numbers.
	loadUsers = 1000
	// loadAudience is the cluster the exchanged ID tokens are for.
	loadAudience = "load-cluster"
)

var loadConcurrency = []int{1, 8, 32}

// TestLoad logs in through the CLI's cli_password flow against an LDAPIdentityProvider (a real
// slapd) and exchanges the resulting access tokens for a cluster's ID token (RFC 8693), as fast as
// a number of concurrent clients can, at the Supervisor binary acting as its ServiceAccount, with
// its sessions in the real kube-apiserver. It prints rates, latency percentiles, the kube-apiserver
// requests each operation costs and the Supervisor's memory, as benchmark lines for tools/bench.
// It is a measurement: it fails only if a login or an exchange fails, or if the Supervisor's
// client-side rate limit, rather than its work, set the numbers.
func TestLoad(t *testing.T) {
	if !*load {
		t.Skip("load run is opt-in: go test -load (make bench runs it)")
	}
	_, err := ldap.FindSlapd()
	testdeps.Require(t, err)
	ctx := context.Background()
	users := make([]ldap.User, loadUsers)
	for i := range users {
		name := fmt.Sprintf("load-%03d", i)
		users[i] = ldap.User{Username: name, CommonName: name, Mail: name + "@example.com", Password: "pw-" + name, Groups: []string{"load"}}
	}
	start := time.Now()
	dir, err := ldap.Start(ctx, ldap.Options{Users: users})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dir.Close() })
	t.Logf("slapd with %d users started in %v", loadUsers, time.Since(start).Round(time.Millisecond))

	issuerURL := setUpLDAPIssuer(t, "load", dir)
	client := loadClient()
	cli := cliConfig(issuerURL)
	var next atomic.Int64
	login := func(ctx context.Context) (*oauth2.Token, error) {
		u := users[int(next.Add(1))%len(users)]
		return passwordLogin(ctx, client, cli, u.Username, u.Password)
	}
	// The endpoints serve the identity provider once the registry has it, which may be a moment
	// after the FederationDomain says Ready.
	eventually(t, "a first password login", func() error {
		_, err := login(ctx)
		return err
	})

	secretsBefore := countSecrets(t)
	memBefore := supervisorMemory(t)
	requestsBefore := secretRequests(t)
	throttledBefore := throttlingWaits(t)
	// Each rate over the kube-apiserver's own no-op request at the same concurrency, measured in
	// turn with it (againstKube): figures that do not depend on the machine, which the short form
	// gates.
	kubeReference, err := loadrun.KubeReference(env.cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	loadrun.WriteUnits(os.Stdout)
	var logins int
	var single loadrun.Result
	var singleKube time.Duration
	for _, clients := range loadConcurrency {
		kubeBefore := secretRequestSeconds(t)
		// A login at 32 clients takes about half a second, so rounds of a second would cut
		// many short (and leave their sessions' Secrets counted against no login): one round,
		// the reference just before the logins.
		k, r := againstKube(t, "password login", clients, *loadDuration, kubeReference, func(ctx context.Context, _ int) error {
			_, err := login(ctx)
			return err
		})
		loadrun.Write(os.Stdout, fmt.Sprintf("KubeAPI/request=SelfSubjectReview/clients=%d", clients), k.Figures()...)
		if clients == 1 {
			// With one client the kube-apiserver serves nothing else: its time on the Secrets is
			// what a login waits for them.
			singleKube = time.Duration(secretRequestSeconds(t).minus(kubeBefore).total(r.Count) * float64(time.Second))
		}
		logins += r.Count
		loadrun.Write(os.Stdout, fmt.Sprintf("Supervisor/operation=password-login/clients=%d", clients), r.Figures()...)
		loadrun.Write(os.Stdout, fmt.Sprintf("SupervisorOverKube/operation=password-login/clients=%d", clients), loadrun.Figure{Value: r.Rate / k.Rate, Unit: loadrun.Ratio})
		if clients == 1 {
			single = r
		}
	}
	secretsAfter := countSecrets(t)
	loginRequests := secretRequests(t).minus(requestsBefore)
	loginWrites := loginRequests.total(logins) - loginRequests["GET"]/float64(logins)
	loginSplit(t, single, singleKube, loginRequests.total(logins), loginWrites, dir, users)
	var exchanges int
	var exchangeRequests requestCounts
	for _, clients := range loadConcurrency {
		// Each client exchanges its own session's access token, as one CLI per user would.
		accessTokens := make([]string, clients)
		for i := range accessTokens {
			tok, err := login(ctx)
			if err != nil {
				t.Fatalf("logging in for the exchanges: %v", err)
			}
			accessTokens[i] = tok.AccessToken
		}
		before := secretRequests(t)
		k, r := againstKube(t, "token exchange", clients, time.Second, kubeReference, func(ctx context.Context, c int) error {
			return exchange(ctx, client, issuerURL, accessTokens[c])
		})
		exchanges += r.Count
		exchangeRequests = exchangeRequests.plus(secretRequests(t).minus(before))
		loadrun.Write(os.Stdout, fmt.Sprintf("Supervisor/operation=token-exchange/clients=%d", clients), r.Figures()...)
		loadrun.Write(os.Stdout, fmt.Sprintf("SupervisorOverKube/operation=token-exchange/clients=%d", clients), loadrun.Figure{Value: r.Rate / k.Rate, Unit: loadrun.Ratio})
	}
	memAfter := supervisorMemory(t)
	// Secret requests the kube-apiserver served (its apiserver_request_total) per operation, and
	// the session Secrets a login leaves.
	loadrun.Write(os.Stdout, "SupervisorKubeRequests/operation=password-login", loadrun.Figure{Value: loginRequests.total(logins), Unit: loadrun.PerCall})
	loadrun.Write(os.Stdout, "SupervisorKubeRequests/operation=token-exchange", loadrun.Figure{Value: exchangeRequests.total(exchanges), Unit: loadrun.PerCall})
	loadrun.Write(os.Stdout, "SupervisorSessionSecrets/operation=password-login",
		loadrun.Figure{Value: float64(secretsAfter-secretsBefore) / float64(logins), Unit: "secrets/login"})
	loadrun.Write(os.Stdout, "SupervisorMemory/state=before-load", loadrun.Figure{Value: memBefore.RSS, Unit: loadrun.MiB})
	loadrun.Write(os.Stdout, "SupervisorMemory/state=after-load", loadrun.Figure{Value: memAfter.RSS, Unit: loadrun.MiB})
	loadrun.Write(os.Stdout, "SupervisorMemory/state=peak", loadrun.Figure{Value: memAfter.Peak, Unit: loadrun.MiB})
	t.Logf("per login: %s Secret requests; per exchange: %s", loginRequests.per(logins), exchangeRequests.per(exchanges))
	// Where the Supervisor's kube client waited for its client-side rate limit (client-go's QPS and
	// burst), the limit, not the work, set the numbers above: a measurement of the wrong thing.
	if throttled := throttlingWaits(t) - throttledBefore; throttled > 0 {
		t.Errorf("the Supervisor's kube client waited %d times for its client-side rate limit", throttled)
	}
	if *loadSessions > 0 {
		sessionScale(t, func() func(context.Context, int) error {
			tok, err := login(ctx)
			if err != nil {
				t.Fatalf("logging in for the session steps: %v", err)
			}
			return func(ctx context.Context, _ int) error { return exchange(ctx, client, issuerURL, tok.AccessToken) }
		})
	}
}

// setUpLDAPIssuer creates the LDAPIdentityProvider for dir, its bind Secret, and a FederationDomain
// with its own TLS certificate that lists it, all named after name; it returns the issuer URL once
// the FederationDomain is Ready.
func setUpLDAPIssuer(t *testing.T, name string, dir *ldap.LDAP) string {
	t.Helper()
	secrets := env.kube.CoreV1().Secrets(supervisorNamespace)
	bind, idp := name+"-ldap-bind", name+"-ldap"
	createObject(t, secrets.Create, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bind},
		Type:       corev1.SecretTypeBasicAuth,
		StringData: map[string]string{corev1.BasicAuthUsernameKey: dir.BindDN, corev1.BasicAuthPasswordKey: dir.BindPassword},
	})
	t.Cleanup(func() { _ = secrets.Delete(context.Background(), bind, metav1.DeleteOptions{}) })
	idps := env.supervisor.IdpV1alpha1().LDAPIdentityProviders(supervisorNamespace)
	createObject(t, idps.Create, &idpv1alpha1.LDAPIdentityProvider{
		ObjectMeta: metav1.ObjectMeta{Name: idp},
		Spec: idpv1alpha1.LDAPIdentityProviderSpec{
			Host: dir.LDAPSAddress,
			TLS:  &idpv1alpha1.TLSSpec{CertificateAuthorityData: base64.StdEncoding.EncodeToString(dir.CABundle)},
			Bind: idpv1alpha1.LDAPIdentityProviderBind{SecretName: bind},
			UserSearch: idpv1alpha1.LDAPIdentityProviderUserSearch{
				Base: ldap.UsersBaseDN, Attributes: idpv1alpha1.LDAPIdentityProviderUserSearchAttributes{Username: "uid", UID: "entryUUID"},
			},
			GroupSearch: idpv1alpha1.LDAPIdentityProviderGroupSearch{
				Base: ldap.GroupsBaseDN, Attributes: idpv1alpha1.LDAPIdentityProviderGroupSearchAttributes{GroupName: "cn"},
			},
		},
	})
	t.Cleanup(func() { _ = idps.Delete(context.Background(), idp, metav1.DeleteOptions{}) })
	eventually(t, "LDAPIdentityProvider Ready", func() error {
		got, err := idps.Get(context.Background(), idp, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.Phase != idpv1alpha1.PhaseReady {
			return fmt.Errorf("phase %q, conditions %+v", got.Status.Phase, got.Status.Conditions)
		}
		return nil
	})

	host := name + ".example.test"
	createTLSSecret(t, name+"-tls", host)
	issuerURL := fmt.Sprintf("https://%s:%d/%s-issuer", host, env.port, name)
	createFederationDomain(t, name, configv1alpha1.FederationDomainSpec{
		Issuer: issuerURL,
		TLS:    &configv1alpha1.FederationDomainTLSSpec{SecretName: name + "-tls"},
		IdentityProviders: []configv1alpha1.FederationDomainIdentityProvider{{
			DisplayName: loadIDPDisplayName,
			ObjectRef:   corev1.TypedLocalObjectReference{APIGroup: ptr.To(idpv1alpha1.GroupName), Kind: "LDAPIdentityProvider", Name: idp},
		}},
	})
	waitForConditions(t, name, configv1alpha1.PhaseReady, map[string]string{})
	return issuerURL
}

// cliConfig is the pinniped CLI's OAuth client of the issuer.
func cliConfig(issuerURL string) *oauth2.Config {
	return &oauth2.Config{
		ClientID: "pinniped-cli",
		Endpoint: oauth2.Endpoint{
			AuthURL: issuerURL + "/oauth2/authorize", TokenURL: issuerURL + "/oauth2/token", AuthStyle: oauth2.AuthStyleInParams,
		},
		RedirectURL: "http://127.0.0.1:48095/callback",
		// The CLI's default scopes for a Supervisor.
		Scopes: []string{"offline_access", "openid", "pinniped:request-audience", "username", "groups"},
	}
}

// loginSplit splits a password login at one client (r, whose requests Secret requests, writes of
// them writes, the kube-apiserver served in kube per login) into the parts that are not the Supervisor's
// own work: its upstream's (the Supervisor's own LDAP client making a login's binds and searches,
// straight to slapd) and the kube-apiserver's. For comparison it measures a Secret's create and
// delete by an administrator (about 2 KiB, like a session's). It writes the figures and logs the
// split. It runs after the login requests are counted.
func loginSplit(t *testing.T, r loadrun.Result, kube time.Duration, requests, writes float64, dir *ldap.LDAP, users []ldap.User) {
	t.Helper()
	upstream := loadUpstream(t, dir)
	u := supervisorStep(t, "upstream LDAP authentication", 1, func(ctx context.Context, n int) error {
		_, err := upstream.Authenticate(ctx, users[n%len(users)].Username, users[n%len(users)].Password)
		return err
	})
	unthrottled := rest.CopyConfig(env.cp.RESTConfig())
	unthrottled.QPS = -1
	admin, err := kubernetes.NewForConfig(unthrottled)
	if err != nil {
		t.Fatal(err)
	}
	secrets := admin.CoreV1().Secrets(supervisorNamespace)
	payload := map[string][]byte{"session": make([]byte, 2048)}
	w := supervisorStep(t, "Secret create and delete", 1, func(ctx context.Context, _ int) error {
		s, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{GenerateName: "load-write-"}, Data: payload}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		return secrets.Delete(ctx, s.Name, metav1.DeleteOptions{})
	})
	loadrun.Write(os.Stdout, "SupervisorUpstream/operation=ldap-authenticate/clients=1", u.Figures()...)
	loadrun.Write(os.Stdout, "KubeAPI/request=Secret-create-and-delete/clients=1", w.Figures()...)
	loadrun.Write(os.Stdout, "SupervisorLoginKubeTime/clients=1", loadrun.Figure{Value: float64(kube.Microseconds()) / 1000, Unit: loadrun.MillisPerCall})
	loadrun.Write(os.Stdout, "SupervisorLoginOverUpstream/clients=1", loadrun.Figure{Value: r.Rate / u.Rate, Unit: loadrun.Ratio})
	t.Logf("a password login at one client takes %v at p50: %v its upstream's binds and searches, %v the kube-apiserver serving its %.1f Secret requests (%.1f of them writes; an administrator's create and delete take %v each), the rest (%v) the Supervisor's own work and the round trips",
		r.P50, u.P50, kube.Round(10*time.Microsecond), requests, writes, w.P50/2, (r.P50 - u.P50 - kube).Round(10*time.Microsecond))
}

// loadUpstream is the Supervisor's LDAP client for dir, configured as setUpLDAPIssuer's
// LDAPIdentityProvider is.
func loadUpstream(t *testing.T, dir *ldap.LDAP) *ldapclient.Provider {
	t.Helper()
	p, err := ldapclient.New(ldapclient.Config{
		Host: dir.LDAPSAddress, CABundle: dir.CABundle, BindUsername: dir.BindDN, BindPassword: dir.BindPassword,
		UserSearch:  ldapclient.UserSearch{Base: ldap.UsersBaseDN, UsernameAttribute: "uid", UIDAttribute: "entryUUID"},
		GroupSearch: ldapclient.GroupSearch{Base: ldap.GroupsBaseDN, GroupNameAttribute: "cn"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const loadIDPDisplayName = "Load LDAP"

// loadClient reaches the Supervisor whatever the URL's host, trusts the test CA, keeps enough
// idle connections for every concurrent client, and follows no redirect (the CLI reads the
// authorization response from the redirect itself).
func loadClient() *http.Client {
	roots := x509.NewCertPool()
	roots.AddCert(env.ca.Certificate())
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return dialer.DialContext(ctx, "tcp", env.address)
			},
			TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			MaxIdleConnsPerHost: 2 * slices.Max(loadConcurrency),
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// passwordLogin is the pinniped CLI's cli_password login: the authorization request with state,
// nonce, PKCE (S256) and the identity provider's name and type, the credentials in headers, and
// the code from the redirect's query redeemed at the token endpoint.
func passwordLogin(ctx context.Context, client *http.Client, cli *oauth2.Config, username, password string) (*oauth2.Token, error) {
	verifier, state := oauth2.GenerateVerifier(), rand.Text()
	authURL := cli.AuthCodeURL(state, oidc.Nonce(rand.Text()), oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("pinniped_idp_name", loadIDPDisplayName), oauth2.SetAuthURLParam("pinniped_idp_type", "ldap"))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Pinniped-Username", username)
	req.Header.Set("Pinniped-Password", password)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	loc, err := resp.Location()
	if err != nil {
		return nil, fmt.Errorf("authorization request for %s: %s without a redirect", username, resp.Status)
	}
	q := loc.Query()
	if q.Get("code") == "" || q.Get("state") != state {
		return nil, fmt.Errorf("authorization request for %s: redirected with error %q: %s", username, q.Get("error"), q.Get("error_description"))
	}
	tok, err := cli.Exchange(context.WithValue(ctx, oauth2.HTTPClient, client), q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		return nil, fmt.Errorf("redeeming the code of %s: %w", username, err)
	}
	if tok.AccessToken == "" || tok.Extra("id_token") == nil {
		return nil, fmt.Errorf("the token response for %s lacks an access or ID token", username)
	}
	return tok, nil
}

// exchange is the CLI's RFC 8693 token exchange of its access token for an ID token whose
// audience is a cluster.
func exchange(ctx context.Context, client *http.Client, issuerURL, accessToken string) error {
	form := url.Values{
		"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"}, "client_id": {"pinniped-cli"},
		"audience": {loadAudience}, "subject_token": {accessToken},
		"subject_token_type":   {"urn:ietf:params:oauth:token-type:access_token"},
		"requested_token_type": {"urn:ietf:params:oauth:token-type:jwt"},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, issuerURL+"/oauth2/token", strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return err
	}
	var got struct {
		AccessToken     string `json:"access_token"`
		IssuedTokenType string `json:"issued_token_type"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &got) != nil || got.AccessToken == "" {
		return fmt.Errorf("token exchange: %s: %s", resp.Status, body)
	}
	return nil
}

// supervisorStep runs one step of the load and fails t if a call failed.
func supervisorStep(t *testing.T, what string, clients int, op func(ctx context.Context, client int) error) loadrun.Result {
	t.Helper()
	r := loadrun.Closed(clients, *loadDuration, op)
	loadrun.Check(t, what, clients, r, env.serverLog)
	return r
}

// againstKube runs the kube-apiserver's own no-op request (kube) and op in turn, in rounds
// (loadrun.Interleaved), and returns kube's result and op's: a ratio of the two is then of rates
// measured over the same stretch of time, which a shared host's speed drifting over the run does
// not move (it was measured before every other step, minutes away from some). The no-op reads
// no Secret, so op's Secret requests are counted alone.
func againstKube(t *testing.T, what string, clients int, round time.Duration, kube, op func(ctx context.Context, client int) error) (loadrun.Result, loadrun.Result) {
	t.Helper()
	results := loadrun.Interleaved(clients, *loadDuration, round, kube, op)
	loadrun.Check(t, "SelfSubjectReview beside "+what, clients, results[0], env.serverLog)
	loadrun.Check(t, what, clients, results[1], env.serverLog)
	return results[0], results[1]
}

func countSecrets(t *testing.T) int {
	t.Helper()
	list, err := env.kube.CoreV1().Secrets(supervisorNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// requestCounts are the kube-apiserver's Secret requests on single objects, by verb.
type requestCounts map[string]float64

func (c requestCounts) minus(o requestCounts) requestCounts {
	d := requestCounts{}
	for verb, n := range c {
		if n -= o[verb]; n != 0 {
			d[verb] = n
		}
	}
	return d
}

func (c requestCounts) plus(o requestCounts) requestCounts {
	s := requestCounts{}
	for verb, n := range c {
		s[verb] = n
	}
	for verb, n := range o {
		s[verb] += n
	}
	return s
}

// total is the requests per op.
func (c requestCounts) total(ops int) float64 {
	var total float64
	for _, n := range c {
		total += n
	}
	return total / float64(ops)
}

// per describes the counts divided by ops, e.g. "13.0 (3.0 POST, 5.0 GET, ...)".
func (c requestCounts) per(ops int) string {
	if ops == 0 {
		return "n/a"
	}
	var parts []string
	for _, verb := range slices.Sorted(maps.Keys(c)) {
		parts = append(parts, fmt.Sprintf("%.1f %s", c[verb]/float64(ops), verb))
	}
	return fmt.Sprintf("%.1f (%s)", c.total(ops), strings.Join(parts, ", "))
}

// secretRequests reads how many requests on single Secrets the kube-apiserver has served, from
// its metrics: during the load steps they are the Supervisor's session storage.
func secretRequests(t *testing.T) requestCounts {
	t.Helper()
	return secretMetric(t, "apiserver_request_total")
}

// secretRequestSeconds reads how long the kube-apiserver took to serve them, from its handling
// of a request's first byte to its last.
func secretRequestSeconds(t *testing.T) requestCounts {
	t.Helper()
	return secretMetric(t, "apiserver_request_duration_seconds")
}

// secretMetric sums the kube-apiserver's metric name over requests on single Secrets, by verb.
func secretMetric(t *testing.T, name string) requestCounts {
	t.Helper()
	return metricstest.Sum(metricstest.KubeAPIServer(t, env.kube), name, func(l map[string]string) (string, bool) {
		return l["verb"], l["resource"] == "secrets" && l["scope"] == "resource"
	})
}

// throttlingWaits counts the Supervisor's log lines of client-go waiting for the client-side rate
// limit (logged from 50 ms at the debug level the tests run it with).
func throttlingWaits(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile(env.logPath)
	if err != nil {
		t.Fatalf("reading the Supervisor's log: %v", err)
	}
	return strings.Count(string(data), "client-side throttling")
}

// supervisorMemory reads the Supervisor process's resident memory.
func supervisorMemory(t *testing.T) loadrun.Memory {
	t.Helper()
	m, err := loadrun.MemoryOf(env.process.Process.Pid)
	if err != nil {
		t.Fatalf("reading the Supervisor's memory: %v", err)
	}
	return m
}
