package conformance

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/yaml"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	conciergeclientset "sealion.dev/core/generated/concierge/clientset/versioned"
	"sealion.dev/e2e/outage"
	"sealion.dev/e2e/steps"
	"sealion.dev/fixtures/browser"
	"sealion.dev/fixtures/dex"
	"sealion.dev/fixtures/ldap"
	"sealion.dev/providers"
)

// The tests of this file break a running installation the ways production breaks it (a pod
// deleted, a server restarted, the kube-apiserver restarted, an upstream identity provider gone)
// while users log in, and check that nothing a user holds is lost: no exchange fails beyond one
// client retry, sessions survive, and the servers recover without a restart of their own. Each
// logs the figures of its fault, for the report.

// The namespaces of our release's install YAMLs: the faults are made only where the suite
// installed the servers (skipIfInstalled).
const (
	conciergeNamespace  = "pinniped-concierge"
	supervisorNamespace = "pinniped-supervisor"
	// proxyLoadBalancerService is the Concierge's default name for the proxy's LoadBalancer Service.
	proxyLoadBalancerService = "pinniped-concierge-impersonation-proxy-load-balancer"
	// faultLoadClients is how many clients exchange tokens at once during a fault.
	faultLoadClients = 8
	// faultQuiet is how long a load runs before a fault and after recovery, for comparison.
	faultQuiet = 10 * time.Second
)

// TestFaultConciergePodDeleted deletes a Concierge pod, then rolls out the Concierge and the
// webhook authenticator, while clients exchange tokens the way the CLI does on this cluster (the
// aggregated API, or the impersonation proxy where that is the strategy): every exchange must
// succeed at its first try.
func TestFaultConciergePodDeleted(t *testing.T) {
	skipIfInstalled(t, "deletes and rolls out the Concierge's pods")
	var exchange func(context.Context) error
	f := features.New("a Concierge pod deleted under a load of exchanges").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			setUpLocalUsers(ctx, t, cfg)
			exchange = exchanger(ctx, t, cfg)
			return ctx
		}).
		Assess("no exchange fails, not even a first try", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			kube := kubeClient(t, cfg)
			pods := serverPods(ctx, t, kube, conciergeNamespace)
			load := startLoad(ctx, "exchanges", faultLoadClients, exchange)
			time.Sleep(faultQuiet)
			victim := pods[0].Name
			deleted := time.Now()
			if err := kube.CoreV1().Pods(conciergeNamespace).Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
				load.stop()
				t.Fatal(err)
			}
			err := waitForReplacement(ctx, kube, conciergeNamespace, victim)
			replaced := time.Now()
			time.Sleep(faultQuiet)
			res := load.stop()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("Concierge pod %s deleted; its replacement was ready %s later", victim, replaced.Sub(deleted).Round(100*time.Millisecond))
			// The pod was deleted as a rolling update or a node drain deletes pods: gracefully. The
			// Concierge serves while it leaves the endpoints and finishes what it has begun, so
			// no client needs its retry.
			res.expectNoFailure(t, "while the pod was replaced", deleted, replaced)
			return ctx
		}).
		Assess("a rolling restart of each server an exchange goes through fails no request and loses no update", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// An upgrade or a configuration change rolls every pod of a Deployment, one new pod
			// ready before an old one goes: the Concierge (and its proxy where that is the
			// strategy), then the webhook it asks.
			// The load is what a cluster's users do at once: 32 clients exchanging tokens, or,
			// where the proxy serves, half of them listing through it while others hold
			// watches through it.
			mix := newMixFixture(ctx, t, cfg, exchange)
			for _, d := range []struct{ namespace, name string }{
				{conciergeNamespace, "pinniped-concierge"},
				{"local-user-authenticator", "local-user-authenticator"},
			} {
				load := mix.start(ctx, t)
				time.Sleep(faultQuiet)
				began := time.Now()
				err := rollOut(ctx, cfg.KubeconfigFile(), d.namespace, d.name)
				rolled := time.Now()
				time.Sleep(faultQuiet)
				load.stop(t, "during the rolling restart of "+d.name, began, rolled)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("deployment %s/%s rolled out in %s", d.namespace, d.name, rolled.Sub(began).Round(100*time.Millisecond))
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// TestFaultProxyPodStoppedMidStream stops the impersonation proxy pod a port-forward goes
// through while its user talks over it, as a rolling update or a node drain stops it: the proxy
// keeps relaying the stream while it drains, so what ends within the drain (a kubectl cp, an
// exec of a few seconds) completes rather than being cut when the pod stopped accepting
// connections.
func TestFaultProxyPodStoppedMidStream(t *testing.T) {
	skipIfInstalled(t, "stops an impersonation proxy pod")
	f := features.New("a port-forward through an impersonation proxy pod that stops").
		Assess("the conversation over it completes", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			skipUnlessProxyServes(ctx, t)
			setUpLocalUsers(ctx, t, cfg)
			kube := kubeClient(t, cfg)
			const ns, target = "local-user-authenticator", "local-user-authenticator"
			// pinny may forward ports to the local-user-authenticator's pods, whose HTTPS
			// server is the other end of the conversation.
			role := &rbacv1.Role{
				ObjectMeta: metav1.ObjectMeta{Name: "e2e-pinny-portforward"},
				Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/portforward"}, Verbs: []string{"get", "create"}}},
			}
			binding := &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: role.Name},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
				Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "pinny"}},
			}
			if _, err := kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = kube.RbacV1().Roles(ns).Delete(context.WithoutCancel(ctx), role.Name, metav1.DeleteOptions{})
			})
			if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = kube.RbacV1().RoleBindings(ns).Delete(context.WithoutCancel(ctx), binding.Name, metav1.DeleteOptions{})
			})
			secret, err := kube.CoreV1().Secrets(ns).Get(ctx, "api-serving-cert", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			roots := x509.NewCertPool()
			if !roots.AppendCertsFromPEM(secret.Data["caCertificate"]) {
				t.Fatal("the local-user-authenticator's CA is not PEM")
			}

			proxy := listeningProxy(ctx, t, cfg)
			ca, err := base64.StdEncoding.DecodeString(proxy.CertificateAuthorityData)
			if err != nil {
				t.Fatal(err)
			}
			cred := proxyExchange(ctx, t, proxy, "pinny:correct horse").Status.Credential
			if cred == nil {
				t.Fatal("no credential from the proxy for pinny")
			}
			podConfig, proxyPod := proxyPodConfig(ctx, t, kube, &rest.Config{Host: proxy.Endpoint, TLSClientConfig: rest.TLSClientConfig{
				CAData: ca, CertData: []byte(cred.ClientCertificateData), KeyData: []byte(cred.ClientKeyData),
			}})
			forwardCtx, stopForwarding := context.WithCancel(ctx)
			defer stopForwarding()
			var local string
			var last error
			// RBAC takes a moment to see the new binding.
			if err := wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(context.Context) (bool, error) {
				local, last = forwardPort(forwardCtx, podConfig, ns, serverPods(ctx, t, kube, ns)[0].Name, 8443)
				return last == nil, nil
			}); err != nil {
				t.Fatalf("forwarding a port through proxy pod %s as pinny: %v", proxyPod, last)
			}

			// One connection through the forwarded port for the whole conversation: a second
			// dial would mean the stream broke.
			var dials atomic.Int32
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
				DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
					dials.Add(1)
					return (&net.Dialer{}).DialContext(ctx, network, local)
				},
				TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: target + "." + ns + ".svc"},
				MaxConnsPerHost: 1,
			}}
			var exchanges int
			talk := func(until time.Time) {
				for time.Now().Before(until) {
					resp, err := client.Get("https://" + target + "/")
					if err != nil {
						t.Fatalf("after %d requests over the forwarded port, through proxy pod %s: %v", exchanges, proxyPod, err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					exchanges++
					time.Sleep(100 * time.Millisecond)
				}
			}
			talk(time.Now().Add(time.Second))
			deleted := time.Now()
			if err := kube.CoreV1().Pods(conciergeNamespace).Delete(ctx, proxyPod, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			// Past the pod's 5 seconds of serving new connections, within its 10 of draining.
			talk(deleted.Add(8 * time.Second))
			stopForwarding()
			if n := dials.Load(); n != 1 {
				t.Errorf("%d connections through the forwarded port; want the first to last", n)
			}
			t.Logf("%d requests over one forwarded connection, %s of them after proxy pod %s was deleted",
				exchanges, time.Since(deleted).Round(100*time.Millisecond), proxyPod)
			if err := waitForReplacement(ctx, kube, conciergeNamespace, proxyPod); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// rollOut restarts a Deployment's pods as kubectl rollout restart does, and waits until the
// rollout is complete.
func rollOut(ctx context.Context, kubeconfig, namespace, name string) error {
	if _, err := steps.Kubectl(ctx, kubeconfig, "", "rollout", "restart", "-n", namespace, "deployment/"+name); err != nil {
		return err
	}
	_, err := steps.Kubectl(ctx, kubeconfig, "", "rollout", "status", "-n", namespace, "deployment/"+name, "--timeout=3m")
	return err
}

// TestFaultKubeAPIServerRestarted restarts the kube-apiserver, as an upgrade or a crash does:
// both servers must serve again and their controllers see new objects, without a restart of
// their own.
func TestFaultKubeAPIServerRestarted(t *testing.T) {
	skipIfInstalled(t, "restarts the kube-apiserver")
	var (
		restarter providers.APIServerRestarter
		exchange  func(context.Context) error
		host      string
	)
	f := features.New("the kube-apiserver restarted").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			var ok bool
			if restarter, ok = steps.ClusterFrom(ctx).Provider.(providers.APIServerRestarter); !ok {
				t.Skipf("the %s provider cannot restart its clusters' kube-apiserver", steps.ClusterFrom(ctx).Info.Name)
			}
			host = supervisorHost(ctx, t, cfg)
			setUpLocalUsers(ctx, t, cfg)
			exchange = exchanger(ctx, t, cfg)
			return ctx
		}).
		Assess("both servers recover without a restart of their own", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			kube := kubeClient(t, cfg)
			concierge, supervisor := serverPods(ctx, t, kube, conciergeNamespace), serverPods(ctx, t, kube, supervisorNamespace)
			began := time.Now()
			if err := restarter.RestartAPIServer(ctx, steps.ClusterFrom(ctx).Name); err != nil {
				t.Fatal(err)
			}
			stopped := time.Now()
			if err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
				_, err := kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
				return err == nil, nil
			}); err != nil {
				t.Fatalf("the kube-apiserver is not ready 3 minutes after its restart: %v", err)
			}
			ready := time.Now()
			var last error
			if err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
				last = exchange(ctx)
				return last == nil, nil
			}); err != nil {
				t.Fatalf("exchanges still fail 3 minutes after the kube-apiserver came back: %v", last)
			}
			exchanging := time.Now()
			// Objects made now are seen only by controllers whose watches came back, and their
			// status is written only by a leader that still leads.
			kubeconfig := cfg.KubeconfigFile()
			ca, err := kube.CoreV1().Secrets("local-user-authenticator").Get(ctx, "api-serving-cert", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := steps.Kubectl(ctx, kubeconfig, fmt.Sprintf(`apiVersion: authentication.concierge.pinniped.dev/v1alpha1
kind: WebhookAuthenticator
metadata: {name: after-apiserver-restart}
spec:
  endpoint: https://local-user-authenticator.local-user-authenticator.svc/authenticate
  tls: {certificateAuthorityData: %s}
`, base64.StdEncoding.EncodeToString(ca.Data["caCertificate"])), "apply", "-f", "-"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_, _ = steps.Kubectl(context.WithoutCancel(ctx), kubeconfig, "", "delete", "--ignore-not-found", "webhookauthenticator/after-apiserver-restart")
			})
			waitForWebhookReady(ctx, t, cfg, "after-apiserver-restart")
			fd := fmt.Sprintf(`apiVersion: config.supervisor.pinniped.dev/v1alpha1
kind: FederationDomain
metadata: {name: after-apiserver-restart, namespace: %s}
spec: {issuer: %q}
`, supervisorNamespace, issuerURL(host, "after-apiserver-restart"))
			if _, err := steps.Kubectl(ctx, kubeconfig, fd, "apply", "-f", "-"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_, _ = steps.Kubectl(context.WithoutCancel(ctx), kubeconfig, "", "delete", "--ignore-not-found", "-n", supervisorNamespace, "federationdomain/after-apiserver-restart")
			})
			// Without identity providers it is not Ready, but its conditions say why.
			waitForIDPCondition(ctx, t, cfg, "federationdomain/after-apiserver-restart", "IdentityProvidersFound", metav1.ConditionFalse)
			for _, api := range []string{"v1alpha1.login.concierge.pinniped.dev", "v1alpha1.clientsecret.supervisor.pinniped.dev"} {
				if _, err := steps.WaitFor(time.Minute, "condition=Available", "apiservice/"+api)(ctx, cfg); err != nil {
					t.Errorf("APIService %s: %v", api, err)
				}
			}
			seen := time.Now()
			expectSamePods(ctx, t, kube, conciergeNamespace, concierge)
			expectSamePods(ctx, t, kube, supervisorNamespace, supervisor)
			t.Logf("kube-apiserver stopped in %s, ready %s later; exchanges worked again %s after that; new objects were Ready and served %s after that",
				stopped.Sub(began).Round(100*time.Millisecond), ready.Sub(stopped).Round(100*time.Millisecond),
				exchanging.Sub(ready).Round(100*time.Millisecond), seen.Sub(exchanging).Round(100*time.Millisecond))
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// TestFaultSupervisorRestarted restarts the Supervisor in the middle of a browser login and
// during refreshes: the login completes and the session survives, without a new login.
func TestFaultSupervisorRestarted(t *testing.T) {
	skipIfInstalled(t, "restarts the Supervisor")
	const name = "dex-faults"
	var (
		fl       *federatedLogin
		chromium *browser.Browser
		user     cliUser
	)
	f := features.New("the Supervisor restarted during a login and during refreshes").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if steps.FixturesInCluster(steps.ClusterFrom(ctx).Info) {
				t.Skip("cannot run here: this machine reaches the Supervisor through a port-forward to one of its pods, which their restart ends")
			}
			var idp *dex.Dex
			fl, idp = federateDex(ctx, t, cfg, name)
			user = fl.user(ctx, t, name, "browser_authcode")
			chromium = fl.browser(ctx, t, idp.CABundle)
			return ctx
		}).
		Assess("a browser login completes across a restart of every Supervisor pod", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			kube := kubeClient(t, cfg)
			login := dexLogin(dex.DefaultUser)
			var restarted time.Duration
			// The user is on Dex's form, sent there by pods that are gone when the form comes back.
			login.BeforeSubmit = func(ctx context.Context) error {
				began := time.Now()
				err := restartSupervisor(ctx, kube, fl)
				restarted = time.Since(began)
				return err
			}
			if out, err := user.kubectlWithBrowserLogin(ctx, t, chromium, login, "get", "pods", "-n", "kube-system"); err != nil {
				t.Fatalf("kubectl: %v\n%s", err, out)
			}
			if restarted == 0 {
				t.Fatal("the Supervisor was not restarted during the login")
			}
			t.Logf("every Supervisor pod replaced in %s while the user was on Dex's form", restarted.Round(100*time.Millisecond))
			expectWhoami(ctx, t, user, "username: "+dex.DefaultUser.Email, "- seals")
			return ctx
		}).
		Assess("refreshes during a rolling restart keep the session", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			began := time.Now()
			rolled := make(chan error, 1)
			go func() { rolled <- rollOut(ctx, cfg.KubeconfigFile(), supervisorNamespace, "pinniped-supervisor") }()
			refreshes := 0
			for done := false; !done; {
				select {
				case err := <-rolled:
					if err != nil {
						t.Fatalf("the rolling restart: %v", err)
					}
					done = true
				default:
				}
				expectRefreshed(ctx, t, user)
				refreshes++
			}
			t.Logf("%d refreshes during a rolling restart of %s, each kept the session", refreshes, time.Since(began).Round(100*time.Millisecond))
			if refreshes < 2 {
				t.Errorf("only %d refreshes ran during the rolling restart: the test proves little", refreshes)
			}
			return ctx
		}).
		Assess("the session survives a restart of every Supervisor pod at once", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := restartSupervisor(ctx, kubeClient(t, cfg), fl); err != nil {
				t.Fatal(err)
			}
			expectRefreshed(ctx, t, user)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// TestFaultUpstreamDown takes the LDAP directory behind the Supervisor away and brings it back:
// while it is gone the IdP's status says so and a refresh fails with a clear error that keeps the
// session, nothing crashes, and once it is back the same session refreshes and the status
// recovers.
func TestFaultUpstreamDown(t *testing.T) {
	skipIfInstalled(t, "restarts the Supervisor")
	const name = "ldap-faults"
	var (
		fwd   *outage.Forwarder
		fl    *federatedLogin
		pinny cliUser
	)
	f := features.New("the upstream identity provider down, then back").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if !steps.ClusterFrom(ctx).Info.ChangesHost {
				t.Skip(steps.LDAPOutageHostOnly)
			}
			directory, err := ldap.Start(ctx, ldap.Options{ListenIP: hostIP(t)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = directory.Close() })
			// The Supervisor reaches the directory through the forwarder, which the test cuts.
			if fwd, err = outage.Start(hostIP(t).String()+":0", directory.LDAPSAddress); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = fwd.Close() })
			fl, pinny = federateLDAP(ctx, t, cfg, name, fwd.Addr(), directory)
			return ctx
		}).
		Assess("while the directory is down, the status says so and a refresh fails clearly, keeping the session", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			kube := kubeClient(t, cfg)
			supervisor := serverPods(ctx, t, kube, supervisorNamespace)
			fwd.Cut()
			cut := time.Now()
			pinny.expireCachedCredentials(t)
			pinny.expireSessions(t)
			_, stderr, err := pinny.kubectlOutput(ctx, "get", "pods", "-n", "kube-system")
			if err == nil {
				t.Fatal("kubectl worked with the directory down")
			}
			if !strings.Contains(stderr, "could not reach the identity provider") {
				t.Errorf("kubectl with the directory down: %v\n%s; want an error saying the identity provider could not be reached", err, stderr)
			}
			if strings.Contains(stderr, "logging in with the") {
				t.Errorf("the plugin started a new login, which can only fail the same way:\n%s", stderr)
			}
			cond := waitForIDPCondition(ctx, t, cfg, "ldapidentityprovider/"+name, idpv1alpha1.ConditionLDAPConnectionValid, metav1.ConditionFalse)
			if !strings.Contains(cond.Message, fwd.Addr()) {
				t.Errorf("condition %s says %q; want it to name the address %s", cond.Type, cond.Message, fwd.Addr())
			}
			t.Logf("%s False %s after the directory went down: %s: %s", cond.Type, time.Since(cut).Round(100*time.Millisecond), cond.Reason, cond.Message)
			expectSamePods(ctx, t, kube, supervisorNamespace, supervisor)
			return ctx
		}).
		Assess("a Supervisor restarted while the directory is down keeps the session waiting, not lost", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// The new pods cannot probe the directory: they serve the connector that last worked
			// (kept in a Secret by the leader), so the refresh fails as before the restart, as an
			// outage to wait out, rather than as an unknown identity provider, which would make
			// the CLI log in again and lose the session.
			began := time.Now()
			if err := restartSupervisor(ctx, kubeClient(t, cfg), fl); err != nil {
				t.Fatal(err)
			}
			t.Logf("every Supervisor pod replaced in %s while the directory was down", time.Since(began).Round(100*time.Millisecond))
			pinny.expireCachedCredentials(t)
			pinny.expireSessions(t)
			_, stderr, err := pinny.kubectlOutput(ctx, "get", "pods", "-n", "kube-system")
			if err == nil {
				t.Fatal("kubectl worked with the directory down")
			}
			if !strings.Contains(stderr, "could not reach the identity provider") || strings.Contains(stderr, "logging in with the") {
				t.Errorf("kubectl after the restart, with the directory down: %v\n%s; want the error saying the identity provider could not be reached, and no new login", err, stderr)
			}
			return ctx
		}).
		Assess("once the directory is back, the same session refreshes and the status recovers", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := fwd.Restore(); err != nil {
				t.Fatal(err)
			}
			back := time.Now()
			expectRefreshed(ctx, t, pinny)
			refreshed := time.Since(back)
			waitForIDPCondition(ctx, t, cfg, "ldapidentityprovider/"+name, idpv1alpha1.ConditionLDAPConnectionValid, metav1.ConditionTrue)
			waitForPhase(ctx, t, cfg, "ldapidentityprovider/"+name)
			t.Logf("after the directory came back: the session refreshed %s later, the status was Ready %s later",
				refreshed.Round(100*time.Millisecond), time.Since(back).Round(100*time.Millisecond))
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// exchanger returns one TokenCredentialRequest for a local user, made anonymously where
// the CLI makes it on this cluster: the impersonation proxy where that is the strategy, else the
// aggregated API through the kube-apiserver.
func exchanger(ctx context.Context, t *testing.T, cfg *envconf.Config) func(context.Context) error {
	t.Helper()
	var config *rest.Config
	if proxyServes(steps.ClusterFrom(ctx).Info) {
		proxy := listeningProxy(ctx, t, cfg)
		ca, err := base64.StdEncoding.DecodeString(proxy.CertificateAuthorityData)
		if err != nil {
			t.Fatal(err)
		}
		config = &rest.Config{Host: proxy.Endpoint, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	} else {
		waitForStrategy(ctx, t, cfg, "")
		config = rest.AnonymousClientConfig(cfg.Client().RESTConfig())
	}
	config.QPS = -1 // no client-side rate limit: the load is the point
	client, err := conciergeclientset.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	// A password hashed at bcrypt's lowest cost: the local-user-authenticator, a webhook limited
	// to a tenth of a CPU, would otherwise bound the load to a few exchanges a second.
	createLocalUser(ctx, t, cfg, "load", "load password", "seals", bcrypt.MinCost)
	exchange := func(ctx context.Context) error {
		// A new object each time: the client sets and clears its kind while encoding it.
		req := &loginv1alpha1.TokenCredentialRequest{Spec: loginv1alpha1.TokenCredentialRequestSpec{
			Token: "load:load password",
			Authenticator: corev1.TypedLocalObjectReference{APIGroup: ptr.To(authv1alpha1.GroupName),
				Kind: "WebhookAuthenticator", Name: "local-users"},
		}}
		resp, err := client.LoginV1alpha1().TokenCredentialRequests().Create(ctx, req, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if resp.Status.Credential == nil {
			return fmt.Errorf("no credential: %s", ptr.Deref(resp.Status.Message, "(no message)"))
		}
		return nil
	}
	// The webhook's replicas learn of the new user from their watches: wait for it, so that
	// what fails under the load is the fault's doing.
	var last error
	if err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = exchange(ctx)
		return last == nil, nil
	}); err != nil {
		t.Fatalf("the load user cannot exchange its token: %v", last)
	}
	return exchange
}

// attempt is one request of a load, with its retry if the first try failed.
type attempt struct {
	at      time.Time
	latency time.Duration // of the successful try, or of the last
	retried bool
	err     error // of the first try when retried, nil when it succeeded at once
	lost    error // of the retry, when it failed too
}

// load runs op from several clients until stopped; a failed op is retried once, after half a
// second, as a client (or the user) would.
type load struct {
	noun    string // what op does, for the report: "exchanges"
	clients int
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	done    []attempt
	start   time.Time
}

func startLoad(ctx context.Context, noun string, clients int, op func(context.Context) error) *load {
	ctx, cancel := context.WithCancel(ctx)
	l := &load{noun: noun, clients: clients, cancel: cancel, start: time.Now()}
	try := func() (time.Duration, error) {
		reqCtx, done := context.WithTimeout(ctx, 30*time.Second)
		defer done()
		began := time.Now()
		err := op(reqCtx)
		return time.Since(began), err
	}
	for range clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for ctx.Err() == nil {
				a := attempt{at: time.Now()}
				a.latency, a.err = try()
				if a.err != nil && ctx.Err() == nil {
					a.retried = true
					time.Sleep(500 * time.Millisecond)
					a.latency, a.lost = try()
				}
				if ctx.Err() != nil {
					return // cut short by stop: neither a success nor a failure
				}
				l.mu.Lock()
				l.done = append(l.done, a)
				l.mu.Unlock()
			}
		}()
	}
	return l
}

// stop ends the load and returns what it did.
func (l *load) stop() loadRecord {
	l.cancel()
	l.wg.Wait()
	return loadRecord{noun: l.noun, clients: l.clients, attempts: l.done, elapsed: time.Since(l.start)}
}

type loadRecord struct {
	noun     string
	clients  int
	attempts []attempt
	elapsed  time.Duration
}

func (r loadRecord) failed() int {
	n := 0
	for _, a := range r.attempts {
		if a.lost != nil {
			n++
		}
	}
	return n
}

func (r loadRecord) firstFailure() error {
	for _, a := range r.attempts {
		if a.lost != nil {
			return a.lost
		}
	}
	return nil
}

// retried counts the requests whose first try failed, with the first such failure.
func (r loadRecord) retried() (int, error) {
	n := 0
	var first error
	for _, a := range r.attempts {
		if a.retried {
			n++
			if first == nil {
				first = a.err
			}
		}
	}
	return n, first
}

// during counts the requests begun between from and to.
func (r loadRecord) during(from, to time.Time) int {
	n := 0
	for _, a := range r.attempts {
		if !a.at.Before(from) && a.at.Before(to) {
			n++
		}
	}
	return n
}

// expectNoFailure logs the load's figures (report) and fails the test unless every request
// succeeded at its first try and some ran between fault and recovered, the time the load was
// there to prove something about (what says which, for the messages).
func (r loadRecord) expectNoFailure(t *testing.T, what string, fault, recovered time.Time) {
	t.Helper()
	r.report(t, fault, recovered)
	if r.failed() > 0 {
		t.Errorf("%s: %d %s failed even on their retry (first: %v)", what, r.failed(), r.noun, r.firstFailure())
	}
	if n, first := r.retried(); n > 0 {
		t.Errorf("%s: %d %s failed on their first try (first: %v)", what, n, r.noun, first)
	}
	if r.during(fault, recovered) == 0 {
		t.Errorf("%s: no %s ran: the load proves nothing", what, r.noun)
	}
}

// report logs the load's figures before, during and after the fault (from fault to recovered).
func (r loadRecord) report(t *testing.T, fault, recovered time.Time) {
	t.Helper()
	phases := []struct {
		name     string
		from, to time.Time
	}{
		{"before the fault", time.Time{}, fault},
		{"during the fault", fault, recovered},
		{"after recovery", recovered, time.Now().Add(time.Hour)},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s by %d clients in %s:\n", len(r.attempts), r.noun, r.clients, r.elapsed.Round(100*time.Millisecond))
	fmt.Fprintf(&b, "  %-17s %9s %9s %9s %9s %8s %6s\n", "phase", r.noun, "per sec", "p50", "p99", "retried", "lost")
	var retryErrors []string
	var retriedAt []string
	for _, p := range phases {
		var lat latencies
		retried, lost := 0, 0
		for _, a := range r.attempts {
			if a.at.Before(p.from) || !a.at.Before(p.to) {
				continue
			}
			lat = append(lat, a.latency)
			if a.retried {
				retried++
				if len(retryErrors) < 3 {
					retryErrors = append(retryErrors, a.err.Error())
				}
				retriedAt = append(retriedAt, fmt.Sprintf("%+.1fs", a.at.Sub(fault).Seconds()))
			}
			if a.lost != nil {
				lost++
			}
		}
		from, to := p.from, p.to
		if from.IsZero() {
			from = r.attemptsStart()
		}
		if now := time.Now(); to.After(now) {
			to = now
		}
		rate := float64(len(lat)) / max(to.Sub(from).Seconds(), 0.001)
		fmt.Fprintf(&b, "  %-17s %9d %9.1f %9s %9s %8d %6d\n", p.name, len(lat), rate, ms(lat.percentile(0.5)), ms(lat.percentile(0.99)), retried, lost)
	}
	if len(retryErrors) > 0 {
		fmt.Fprintf(&b, "first tries that failed and were retried, begun at (from the fault) %s: %s\n",
			strings.Join(retriedAt, " "), strings.Join(retryErrors, " | "))
	}
	t.Log(b.String())
}

func (r loadRecord) attemptsStart() time.Time {
	if len(r.attempts) == 0 {
		return time.Now()
	}
	first := r.attempts[0].at
	for _, a := range r.attempts {
		if a.at.Before(first) {
			first = a.at
		}
	}
	return first
}

// serverPods lists the running pods of a server's namespace, sorted by name.
func serverPods(ctx context.Context, t *testing.T, kube kubernetes.Interface, namespace string) []corev1.Pod {
	t.Helper()
	list, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			pods = append(pods, p)
		}
	}
	if len(pods) == 0 {
		t.Fatalf("no running pod in %s", namespace)
	}
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods
}

// expectSamePods checks that the namespace runs the same pods as before, none restarted.
func expectSamePods(ctx context.Context, t *testing.T, kube kubernetes.Interface, namespace string, before []corev1.Pod) {
	t.Helper()
	after := serverPods(ctx, t, kube, namespace)
	describe := func(pods []corev1.Pod) string {
		var s []string
		for _, p := range pods {
			restarts := int32(0)
			for _, c := range p.Status.ContainerStatuses {
				restarts += c.RestartCount
			}
			s = append(s, fmt.Sprintf("%s (restarts %d)", p.Name, restarts))
		}
		return strings.Join(s, ", ")
	}
	if b, a := describe(before), describe(after); a != b {
		t.Errorf("the pods of %s changed: before %s; after %s", namespace, b, a)
	}
}

// waitForReplacement waits until the namespace's Deployment has all its replicas ready again
// and none of them is the deleted pod.
func waitForReplacement(ctx context.Context, kube kubernetes.Interface, namespace, deleted string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		ready := 0
		for _, p := range list.Items {
			if p.Name == deleted {
				last = "the deleted pod is still there"
				return false, nil
			}
			if p.DeletionTimestamp == nil && podReady(&p) {
				ready++
			}
		}
		last = fmt.Sprintf("%d pods ready", ready)
		return ready >= 2, nil
	})
	if err != nil {
		return fmt.Errorf("the pods of %s were not replaced: %s: %w", namespace, last, err)
	}
	return nil
}

// restartSupervisor deletes every Supervisor pod at once, as a node failure would, and waits
// until their replacements are ready and all serve fl's issuer again.
func restartSupervisor(ctx context.Context, kube kubernetes.Interface, fl *federatedLogin) error {
	list, err := kube.CoreV1().Pods(supervisorNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var old []string
	for _, p := range list.Items {
		old = append(old, p.Name)
		if err := kube.CoreV1().Pods(supervisorNamespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			return err
		}
	}
	for _, name := range old {
		if err := waitForReplacement(ctx, kube, supervisorNamespace, name); err != nil {
			return err
		}
	}
	return fl.waitServed(ctx)
}

// expectRefreshed ages u's cached credential and tokens and runs kubectl, which must refresh the
// session with the Supervisor rather than log in again.
func expectRefreshed(ctx context.Context, t *testing.T, u cliUser) {
	t.Helper()
	stderr := refreshAndRun(ctx, t, u)
	if !strings.Contains(stderr, "refreshing the session with its refresh token") || strings.Contains(stderr, "refreshing the session failed") {
		t.Fatalf("kubectl did not keep the session:\n%s", stderr)
	}
}

// waitForIDPCondition waits up to three minutes (two probes of the leader) for a condition of a Supervisor object (an identity
// provider, a FederationDomain) to have status and returns it.
func waitForIDPCondition(ctx context.Context, t *testing.T, cfg *envconf.Config, resource, condType string, status metav1.ConditionStatus) metav1.Condition {
	t.Helper()
	var last string
	var found metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		out, err := steps.Kubectl(ctx, cfg.KubeconfigFile(), "", "get", "-n", supervisorNamespace, resource, "-o",
			fmt.Sprintf(`jsonpath={.status.conditions[?(@.type==%q)]}`, condType))
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = out
		var c metav1.Condition
		if err := yaml.Unmarshal([]byte(out), &c); err != nil {
			return false, nil
		}
		found = c
		return c.Status == status, nil
	})
	if err != nil {
		t.Fatalf("%s: condition %s is not %s after 3 minutes: %s", resource, condType, status, last)
	}
	return found
}
