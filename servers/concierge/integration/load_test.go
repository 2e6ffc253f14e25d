package integration

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	identityv1alpha1 "sealion.dev/core/apis/concierge/identity/v1alpha1"
	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
	conciergeclientset "sealion.dev/core/generated/concierge/clientset/versioned"
	"sealion.dev/core/testing/loadrun"
	"sealion.dev/core/testing/oidcissuer"
)

var (
	load         = flag.Bool("load", false, "run the load test of TokenCredentialRequest through the aggregation layer (make bench)")
	loadDuration = flag.Duration("load-duration", 5*time.Second, "how long each load step runs")
	loadAuths    = flag.String("load-authenticators", "", "with -load, the exchange's rate and the Concierge's memory with these counts of JWTAuthenticators (1,10,100,1000)")
)

// TestLoad exchanges tokens as fast as a number of concurrent clients can, through the real
// kube-apiserver aggregation layer, and prints rates, latency percentiles, the rate as a fraction
// of a no-op aggregated request's, and the Concierge's peak memory, as benchmark lines for
// tools/bench. It is a measurement, not a pass/fail timing: it fails only if an exchange fails.
func TestLoad(t *testing.T) {
	if !*load {
		t.Skip("load run is opt-in: go test -load (make bench runs it)")
	}
	issuer := oidcissuer.New(t)
	jwtSpec := authv1alpha1.JWTAuthenticatorSpec{
		Issuer: issuer.Issuer, Audience: "cluster-a",
		TLS: &authv1alpha1.TLSSpec{CertificateAuthorityData: b64(issuer.CABundle)},
	}
	createJWTAuthenticator(t, "load-jwt", jwtSpec)
	waitForJWTStatus(t, "load-jwt", func(s authv1alpha1.JWTAuthenticatorStatus) bool { return s.Phase == authv1alpha1.PhaseReady })
	jwtToken, err := issuer.Issue(map[string]any{"sub": "s", "aud": "cluster-a", "username": "alice", "groups": []string{"devs"}}, oidcissuer.WithAlgorithm("ES256"))
	if err != nil {
		t.Fatal(err)
	}

	// The cheapest bcrypt cost, so the numbers show the exchange rather than password hashing.
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	secrets := env.kube.CoreV1().Secrets(usersNamespace)
	user := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "loaduser"}, Data: map[string][]byte{"passwordHash": hash, "groups": []byte("devs")}}
	if _, err := secrets.Create(context.Background(), user, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = secrets.Delete(context.Background(), "loaduser", metav1.DeleteOptions{}) })
	createWebhookAuthenticator(t, "load-webhook", authv1alpha1.WebhookAuthenticatorSpec{
		Endpoint: env.webhookURL, TLS: &authv1alpha1.TLSSpec{CertificateAuthorityData: b64(env.webhookCA)},
	})
	waitForWebhookStatus(t, "load-webhook", func(s authv1alpha1.WebhookAuthenticatorStatus) bool { return s.Phase == authv1alpha1.PhaseReady })

	// The reference: a WhoAmIRequest, an aggregated resource of ours that does next to nothing,
	// so its rate is what the aggregation layer itself allows on this machine. The exchange's
	// rate as a fraction of it is the figure that does not depend on the machine. It is asked
	// anonymously, as the exchange is: an administrator's requests are exempt from both servers'
	// priority and fairness and from RBAC (system:masters), so an administrator's rate is not
	// what the path an exchange takes allows. The administrator's rate is reported too, over the
	// kube-apiserver's own no-op request asked alike.
	// Every client without the client's rate limit, so that the servers are measured.
	unthrottled := rest.CopyConfig(env.cp.RESTConfig())
	unthrottled.QPS = -1
	admin, err := conciergeclientset.NewForConfig(unthrottled)
	if err != nil {
		t.Fatal(err)
	}
	whoami := func(client conciergeclientset.Interface) func(context.Context, int) error {
		return func(ctx context.Context, _ int) error {
			_, err := client.IdentityV1alpha1().WhoAmIRequests().Create(ctx, &identityv1alpha1.WhoAmIRequest{}, metav1.CreateOptions{})
			return err
		}
	}
	// WhoAmIRequest itself over the kube-apiserver's own no-op request: what the aggregation
	// layer and our server's request handling cost, whatever the machine.
	kubeReference, err := loadrun.KubeReference(env.cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	loadrun.WriteUnits(os.Stdout)
	// One client count at a time, every request in turn in rounds of a second (loadrun.Interleaved),
	// so that each ratio compares rates measured over the same stretch of time: the machine's
	// state drifts over a run (its collections, the connections the anonymous requests leave
	// closing, a shared host's other load) by more than the differences measured.
	ops := []struct {
		what, name string
		op         func(context.Context, int) error
	}{
		{"SelfSubjectReview", "KubeAPI/request=SelfSubjectReview", kubeReference},
		{"WhoAmIRequest", "AggregatedAPI/request=WhoAmIRequest", whoami(admin)},
		{"anonymous WhoAmIRequest", "AggregatedAPI/request=WhoAmIRequest-anonymous", whoami(env.anonymous)},
		{"JWTAuthenticator", "AggregatedAPI/request=TokenCredentialRequest-JWTAuthenticator", exchanger("JWTAuthenticator", "load-jwt", jwtToken)},
		{"WebhookAuthenticator", "AggregatedAPI/request=TokenCredentialRequest-WebhookAuthenticator", exchanger("WebhookAuthenticator", "load-webhook", "loaduser:pw")},
	}
	var calls []func(context.Context, int) error
	for _, o := range ops {
		calls = append(calls, o.op)
	}
	for _, clients := range loadClients {
		results := loadrun.Interleaved(clients, *loadDuration, time.Second, calls...)
		for i, o := range ops {
			loadrun.Check(t, o.what, clients, results[i], env.serverLogs)
			loadrun.Write(os.Stdout, fmt.Sprintf("%s/clients=%d", o.name, clients), results[i].Figures()...)
		}
		selfSubject, whoAmI, anonymous := results[0], results[1], results[2]
		loadrun.Write(os.Stdout, fmt.Sprintf("WhoAmIOverKube/clients=%d", clients), loadrun.Figure{Value: whoAmI.Rate / selfSubject.Rate, Unit: loadrun.Ratio})
		for i, kind := range []string{"JWTAuthenticator", "WebhookAuthenticator"} {
			loadrun.Write(os.Stdout, fmt.Sprintf("ExchangeOverWhoAmI/authenticator=%s/clients=%d", kind, clients),
				loadrun.Figure{Value: results[3+i].Rate / anonymous.Rate, Unit: loadrun.Ratio})
		}
	}
	mem, err := loadrun.MemoryOf(env.conciergePID)
	if err != nil {
		t.Fatal(err)
	}
	loadrun.Write(os.Stdout, "ConciergeMemory/state=peak", loadrun.Figure{Value: mem.Peak, Unit: loadrun.MiB})
	if *loadAuths != "" {
		authenticatorScale(t, counts(t, *loadAuths), jwtSpec, exchanger("JWTAuthenticator", "load-jwt", jwtToken))
	}
}

// loadClients are the numbers of concurrent clients of each step.
var loadClients = []int{1, 16, 64}

// step runs one step of the load and fails t if a call failed.
func step(t *testing.T, what string, clients int, op func(context.Context, int) error) loadrun.Result {
	t.Helper()
	r := loadrun.Closed(clients, *loadDuration, op)
	loadrun.Check(t, what, clients, r, env.serverLogs)
	return r
}

// exchanger exchanges token with the named authenticator, anonymously, as a user's kubectl does
// before it has a credential.
func exchanger(kind, name, token string) func(context.Context, int) error {
	tcrs := env.anonymous.LoginV1alpha1().TokenCredentialRequests()
	return func(ctx context.Context, _ int) error {
		// A new object for each call: the client sets and clears its kind while encoding it, and
		// the clients of a load step call at once.
		req := &loginv1alpha1.TokenCredentialRequest{Spec: loginv1alpha1.TokenCredentialRequestSpec{
			Token:         token,
			Authenticator: corev1.TypedLocalObjectReference{APIGroup: ptr.To(authv1alpha1.GroupName), Kind: kind, Name: name},
		}}
		resp, err := tcrs.Create(ctx, req, metav1.CreateOptions{})
		if err != nil || resp.Status.Credential == nil {
			return errors.New(describeFailure(resp, err))
		}
		return nil
	}
}

func describeFailure(resp *loginv1alpha1.TokenCredentialRequest, err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fmt.Sprintf("%+v", status.Status())
	}
	if err != nil {
		return err.Error()
	}
	return "no credential: " + ptr.Deref(resp.Status.Message, "")
}
