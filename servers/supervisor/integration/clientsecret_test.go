package integration

import (
	"bytes"
	"context"
	"regexp"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	clientsecretv1alpha1 "sealion.dev/core/apis/supervisor/clientsecret/v1alpha1"
	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	"sealion.dev/core/servingcert"
	"sealion.dev/servers/supervisor/internal/aggregatortest"
	"sealion.dev/servers/supervisor/internal/clientcheck"
	"sealion.dev/servers/supervisor/internal/clientsecrets"
)

const apiServiceName = "pinniped-supervisor-api"

// The Supervisor serves OIDCClientSecretRequest through the aggregation layer with a serving
// certificate of its own making, whose CA it writes into the APIService.
func TestOIDCClientSecretRequestThroughTheAggregator(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const clientName = "client.oauth.pinniped.dev-wired"
	client := aggregatortest.CreateOIDCClient(ctx, t, env.supervisor, supervisorNamespace, clientName)
	t.Cleanup(func() {
		_ = env.supervisor.ConfigV1alpha1().OIDCClients(supervisorNamespace).Delete(context.Background(), clientName, metav1.DeleteOptions{})
	})
	// No CA bundle: the APIService becomes available only once the Supervisor has filled it in.
	ensureAPIService(ctx, t)

	requests := env.supervisor.ClientsecretV1alpha1().OIDCClientSecretRequests(supervisorNamespace)
	resp, err := requests.Create(ctx, &clientsecretv1alpha1.OIDCClientSecretRequest{
		ObjectMeta: metav1.ObjectMeta{Name: clientName},
		Spec:       clientsecretv1alpha1.OIDCClientSecretRequestSpec{GenerateNewSecret: true},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating an OIDCClientSecretRequest: %v", err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(resp.Status.GeneratedSecret) || resp.Status.TotalClientSecrets != 1 {
		t.Fatalf("response: %+v", resp.Status)
	}
	storage, err := env.kube.CoreV1().Secrets(supervisorNamespace).Get(ctx, clientsecrets.SecretName(client.UID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if storage.Labels["app"] != "pinniped-supervisor" {
		t.Errorf("storage Secret labels %v, want the install's", storage.Labels)
	}
	result := clientcheck.Validate(client, storage, bcrypt.DefaultCost)
	if result.Phase != configv1alpha1.PhaseReady || len(result.Hashes) != 1 ||
		bcrypt.CompareHashAndPassword([]byte(result.Hashes[0]), []byte(resp.Status.GeneratedSecret)) != nil {
		t.Errorf("the stored secret does not validate: %+v", result)
	}

	serving, err := env.kube.CoreV1().Secrets(supervisorNamespace).Get(ctx, apiServiceName+"-tls-serving-certificate", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the serving certificate Secret: %v", err)
	}
	as, err := aggregatorclient.NewForConfigOrDie(env.cp.RESTConfig()).ApiregistrationV1().APIServices().Get(ctx, aggregatortest.APIServiceName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ca := serving.Data[servingcert.SecretKeyCACertificate]; len(ca) == 0 || !bytes.Equal(as.Spec.CABundle, ca) {
		t.Errorf("APIService caBundle %q, want the CA of Secret %s", as.Spec.CABundle, serving.Name)
	}
}
