package apiserver

import (
	"context"
	"crypto/rand"
	"net"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"

	clientsecretv1alpha1 "sealion.dev/core/apis/supervisor/clientsecret/v1alpha1"
	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	"sealion.dev/core/certauthority"
	supervisorclientset "sealion.dev/core/generated/supervisor/clientset/versioned"
	"sealion.dev/core/testing/controlplane"
	"sealion.dev/servers/internal/aggregatedapi"
	"sealion.dev/servers/supervisor/internal/aggregatortest"
	"sealion.dev/servers/supervisor/internal/clientcheck"
	"sealion.dev/servers/supervisor/internal/clientsecrets"
	"sealion.dev/servers/supervisor/registry/oidcclientsecretrequest"
)

const (
	namespace   = "pinniped-supervisor"
	serviceName = "pinniped-supervisor-api"
	clientName  = "client.oauth.pinniped.dev-integration"
)

// TestOIDCClientSecretRequestThroughTheAggregator runs the server in this process behind a real
// kube-apiserver's aggregation layer and uses it with the generated typed client, as kubectl
// users would.
func TestOIDCClientSecretRequestThroughTheAggregator(t *testing.T) {
	cp := controlplane.StartForTest(t, controlplane.Options{}) // skips under -short
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kube := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	supervisor := supervisorclientset.NewForConfigOrDie(cp.RESTConfig())

	if out, err := exec.CommandContext(ctx, cp.KubectlPath, "--kubeconfig", cp.KubeconfigPath, "apply",
		"-f", "../deploy/crds/config.supervisor.pinniped.dev_oidcclients.yaml").CombinedOutput(); err != nil {
		t.Fatalf("installing the OIDCClient CRD: %v\n%s", err, out)
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client := aggregatortest.CreateOIDCClient(ctx, t, supervisor, namespace, clientName)

	ca, port := startServer(t, cp, kube)
	aggregatortest.RegisterAPIService(ctx, t, cp.RESTConfig(), namespace, serviceName, port, ca.Bundle())

	requests := supervisor.ClientsecretV1alpha1().OIDCClientSecretRequests(namespace)
	first, err := requests.Create(ctx, &clientsecretv1alpha1.OIDCClientSecretRequest{
		ObjectMeta: metav1.ObjectMeta{Name: clientName},
		Spec:       clientsecretv1alpha1.OIDCClientSecretRequestSpec{GenerateNewSecret: true},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating an OIDCClientSecretRequest: %v", err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(first.Status.GeneratedSecret) || first.Status.TotalClientSecrets != 1 {
		t.Fatalf("first response: %+v", first.Status)
	}
	second, err := requests.Create(ctx, &clientsecretv1alpha1.OIDCClientSecretRequest{
		ObjectMeta: metav1.ObjectMeta{Name: clientName},
		Spec:       clientsecretv1alpha1.OIDCClientSecretRequestSpec{GenerateNewSecret: true, RevokeOldSecrets: true},
	}, metav1.CreateOptions{})
	if err != nil || second.Status.TotalClientSecrets != 1 || second.Status.GeneratedSecret == first.Status.GeneratedSecret {
		t.Fatalf("second response: %+v, %v", second, err)
	}

	// The storage Secret is what the Supervisor's token endpoint and OIDCClient status read.
	storage, err := kube.CoreV1().Secrets(namespace).Get(ctx, clientsecrets.SecretName(client.UID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if refs := storage.OwnerReferences; len(refs) != 1 || refs[0].UID != client.UID || refs[0].APIVersion != "config.supervisor.pinniped.dev/v1alpha1" {
		t.Errorf("owner references %+v", refs)
	}
	result := clientcheck.Validate(client, storage, bcrypt.MinCost)
	if result.Phase != configv1alpha1.PhaseReady || len(result.Hashes) != 1 ||
		bcrypt.CompareHashAndPassword([]byte(result.Hashes[0]), []byte(second.Status.GeneratedSecret)) != nil {
		t.Errorf("the stored secret does not validate: %+v", result)
	}

	_, err = requests.Create(ctx, &clientsecretv1alpha1.OIDCClientSecretRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "client.oauth.pinniped.dev-missing"},
		Spec:       clientsecretv1alpha1.OIDCClientSecretRequestSpec{GenerateNewSecret: true},
	}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("a request for a missing OIDCClient: %v, want Invalid", err)
	}
}

// startServer runs the aggregated server on a free port until the test ends, with a serving
// certificate for its Service's name, and returns the CA that signed it and the port.
func startServer(t *testing.T, cp *controlplane.ControlPlane, kube kubernetes.Interface) (*certauthority.CA, int) {
	t.Helper()
	ca, err := certauthority.New("supervisor aggregated API test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssueServingCert(serviceName, []string{serviceName + "." + namespace + ".svc"}, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := dynamiccertificates.NewStaticCertKeyContent("serving", certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	scheme, err := NewScheme("pinniped.dev")
	if err != nil {
		t.Fatal(err)
	}
	generic, err := aggregatedapi.RecommendedConfig(aggregatedapi.Options{
		BindAddress: net.ParseIP("127.0.0.1"), Port: port, Kubeconfig: cp.KubeconfigPath, Title: "Pinniped Supervisor",
		Scheme: scheme.Scheme, Codecs: scheme.Codecs, Versions: []schema.GroupVersion{scheme.ClientSecretGV}, Cert: cert,
	})
	if err != nil {
		t.Fatal(err)
	}
	supervisor := supervisorclientset.NewForConfigOrDie(cp.RESTConfig())
	completed, err := (&Config{GenericConfig: generic, ExtraConfig: ExtraConfig{
		Scheme: scheme,
		ClientSecrets: oidcclientsecretrequest.Config{
			Namespace:   namespace,
			OIDCClients: supervisor.ConfigV1alpha1().OIDCClients(namespace),
			Store:       &clientsecrets.Store{Secrets: kube.CoreV1().Secrets(namespace)},
			Cost:        bcrypt.MinCost, // the default cost would make each request take 250 ms
			Rand:        rand.Reader,
		},
	}}).Complete()
	if err != nil {
		t.Fatal(err)
	}
	server, err := completed.New()
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.PrepareRun().RunWithContext(runCtx) }()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the aggregated server: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the aggregated server did not stop")
		}
	})
	return ca, port
}

// freePort finds a port on 127.0.0.1 for the server; another process could take it meanwhile, which
// would show as a bind error.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
