package integration

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
)

// A replica started while a FederationDomain exists reports itself ready only once it serves that
// issuer: a Service that sends requests by readiness never sends it one it would answer with a
// 404 or the bootstrap certificate. Found as a fault test's failed refreshes after a pod restart.
func TestNewReplicaIsReadyOnlyOnceItServes(t *testing.T) {
	createTLSSecret(t, "readiness-tls", "readiness.example.test")
	// An issuer is served once its identity providers exist, reachable or not.
	createObject(t, env.supervisor.IdpV1alpha1().LDAPIdentityProviders(supervisorNamespace).Create, &idpv1alpha1.LDAPIdentityProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "readiness-ldap"},
		Spec:       idpv1alpha1.LDAPIdentityProviderSpec{Host: "ldap.example.test", Bind: idpv1alpha1.LDAPIdentityProviderBind{SecretName: "bind"}},
	})
	t.Cleanup(func() {
		_ = env.supervisor.IdpV1alpha1().LDAPIdentityProviders(supervisorNamespace).Delete(context.Background(), "readiness-ldap", metav1.DeleteOptions{})
	})
	issuer := fmt.Sprintf("https://readiness.example.test:%d/ready", env.port)
	createFederationDomain(t, "readiness", configv1alpha1.FederationDomainSpec{
		Issuer: issuer,
		TLS:    &configv1alpha1.FederationDomainTLSSpec{SecretName: "readiness-tls"},
		IdentityProviders: []configv1alpha1.FederationDomainIdentityProvider{{
			DisplayName: "Corp LDAP",
			ObjectRef:   corev1.TypedLocalObjectReference{APIGroup: ptr.To(idpv1alpha1.GroupName), Kind: "LDAPIdentityProvider", Name: "readiness-ldap"},
		}},
	})
	roots := x509.NewCertPool()
	roots.AddCert(env.ca.Certificate())
	discovery := issuer + "/.well-known/openid-configuration"
	status := func(p *supervisorProcess, url string) string {
		resp, err := p.httpClient(roots).Get(url)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Sprintf("%d %s", resp.StatusCode, body)
		}
		return "200"
	}
	eventually(t, "the first replica serves the issuer", func() error {
		if got := status(env.supervisorProcess, discovery); got != "200" {
			return fmt.Errorf("discovery: %s", got)
		}
		return nil
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	second, err := env.startSupervisor(ctx, "second-replica", "")
	if second != nil {
		t.Cleanup(second.stop)
	}
	if err != nil {
		t.Fatalf("starting a second replica: %v%s", err, second.serverLog())
	}
	// The readiness probe's own view (any host name, any certificate), then at once the issuer.
	insecure := second.httpClient(nil)
	unready := 0
	for {
		if ctx.Err() != nil {
			t.Fatalf("the second replica never became ready (%d probes said not ready)%s", unready, second.serverLog())
		}
		resp, err := insecure.Get("https://anything.example.test/readyz")
		if err != nil {
			t.Fatalf("/readyz: %v", err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		unready++
		time.Sleep(10 * time.Millisecond)
	}
	if got := status(second, discovery); got != "200" {
		t.Errorf("the second replica reported ready but answers its issuer's discovery with %s%s", got, second.serverLog())
	}
	t.Logf("%d probes said not ready before the replica was", unready)
}
