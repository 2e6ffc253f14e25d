package apiserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

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

	t.Run("kubectl create -f", func(t *testing.T) { checkKubectlCreate(ctx, t, cp) })
}

// On a cluster that does not serve MutatingAdmissionPolicies (Kubernetes before 1.36, here a
// kube-apiserver told not to), the server switches that admission plugin off and becomes ready:
// the plugin's informer would never sync, and the pods of 1.31 to 1.35 clusters never became
// ready (the full matrix found it).
func TestReadyOnAClusterWithoutMutatingAdmissionPolicies(t *testing.T) {
	cp := controlplane.StartForTest(t, controlplane.Options{ExtraAPIServerFlags: []string{
		"--runtime-config=admissionregistration.k8s.io/v1/mutatingadmissionpolicies=false,admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings=false",
		// The kube-apiserver's own plugin would wait for the kind just as ours did.
		"--disable-admission-plugins=MutatingAdmissionPolicy",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kube := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	resources, err := kube.Discovery().ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resources.APIResources {
		if r.Kind == "MutatingAdmissionPolicy" {
			t.Fatal("the kube-apiserver still serves MutatingAdmissionPolicies: the test would prove nothing")
		}
	}
	_, port := startServer(t, cp, kube)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // only /readyz's answer matters
	var last string
	if err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/readyz?verbose", port))
		if err != nil {
			last = err.Error()
			return false, nil
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		last = string(body)
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("the server never became ready; /readyz answered:\n%s", last)
	}
}

// checkKubectlCreate uses the resource as upstream's documentation does, with `kubectl create -f`
// on a file, and expects upstream's answers: the created object with its secret, and the errors'
// exact messages. The OIDCClient has one secret when it starts.
func checkKubectlCreate(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane) {
	dir := t.TempDir()
	create := func(t *testing.T, manifest string, args ...string) (string, string, error) {
		t.Helper()
		file := filepath.Join(dir, "request.yaml")
		if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, cp.KubectlPath, append([]string{"--kubeconfig", cp.KubeconfigPath, "create", "-f", file}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), strings.TrimSpace(stderr.String()), err
	}
	manifest := func(namespace, name string, generate, revoke bool) string {
		m := "apiVersion: clientsecret.supervisor.pinniped.dev/v1alpha1\nkind: OIDCClientSecretRequest\nmetadata:\n  name: " + name + "\n"
		if namespace != "" {
			m += "  namespace: " + namespace + "\n"
		}
		return m + fmt.Sprintf("spec:\n  generateNewSecret: %t\n  revokeOldSecrets: %t\n", generate, revoke)
	}
	// kubectl prints a refusal as `Error from server (<reason>): error when creating "<file>": <message>`,
	// and an Invalid one as `The <kind> "<name>" is invalid: <causes>`.
	refused := func(t *testing.T, stderr string, err error, reason, message string) {
		t.Helper()
		if err == nil || !strings.HasPrefix(stderr, "Error from server ("+reason+"): ") || !strings.HasSuffix(stderr, `request.yaml": `+message) {
			t.Errorf("kubectl: %v\n%s\nwant the %s error %q", err, stderr, reason, message)
		}
	}
	invalid := func(t *testing.T, stderr string, err error, want string) {
		t.Helper()
		if err == nil || stderr != want {
			t.Errorf("kubectl: %v\n%s\nwant\n%s", err, stderr, want)
		}
	}

	out, stderr, err := create(t, manifest(namespace, clientName, true, false), "-o", "yaml")
	if err != nil {
		t.Fatalf("kubectl create -o yaml: %v\n%s", err, stderr)
	}
	var created map[string]any
	if err := yaml.Unmarshal([]byte(out), &created); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	metadata, _ := created["metadata"].(map[string]any)
	status, _ := created["status"].(map[string]any)
	secret, _ := status["generatedSecret"].(string)
	if created["apiVersion"] != "clientsecret.supervisor.pinniped.dev/v1alpha1" || created["kind"] != "OIDCClientSecretRequest" ||
		metadata["name"] != clientName || metadata["namespace"] != namespace || metadata["creationTimestamp"] == nil || len(metadata) != 3 ||
		!reflect.DeepEqual(created["spec"], map[string]any{"generateNewSecret": true, "revokeOldSecrets": false}) ||
		!regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(secret) || status["totalClientSecrets"] != float64(2) || len(status) != 2 {
		t.Errorf("kubectl create -o yaml printed:\n%s", out)
	}

	out, stderr, err = create(t, manifest(namespace, clientName, true, false))
	if want := "oidcclientsecretrequest.clientsecret.supervisor.pinniped.dev/" + clientName + " created\n"; err != nil || out != want {
		t.Errorf("kubectl create: %v %q %s, want %q", err, out, stderr, want)
	}

	_, stderr, err = create(t, manifest("", clientName, true, false))
	refused(t, stderr, err, "BadRequest", "namespace must be "+namespace+" on OIDCClientSecretRequest, was default")
	_, stderr, err = create(t, manifest(namespace, "webapp", true, false))
	invalid(t, stderr, err, `The OIDCClientSecretRequest "webapp" is invalid: metadata.name: Invalid value: "webapp": must start with 'client.oauth.pinniped.dev-'`)
	_, stderr, err = create(t, manifest(namespace, "client.oauth.pinniped.dev-missing", true, false))
	invalid(t, stderr, err, `The OIDCClientSecretRequest "client.oauth.pinniped.dev-missing" is invalid: metadata.name: Not found: "client.oauth.pinniped.dev-missing"`)
	_, stderr, err = create(t, manifest(namespace, clientName, true, false), "--dry-run=server")
	invalid(t, stderr, err, `The OIDCClientSecretRequest "`+clientName+`" is invalid: dryRun: Unsupported value: ["All"]`)

	// kubectl checks a manifest against the OpenAPI schema first, and names upstream's model.
	_, stderr, err = create(t, manifest(namespace, clientName, true, false)+"  generateNewSecrets: true\n")
	if want := `error validating data: ValidationError(OIDCClientSecretRequest.spec): unknown field "generateNewSecrets" in ` +
		`dev.pinniped.apis.supervisor.clientsecret.v1alpha1.OIDCClientSecretRequestSpec`; err == nil || !strings.Contains(stderr, want) {
		t.Errorf("kubectl: %v\n%s\nwant an error containing %q", err, stderr, want)
	}

	// Three secrets so far; two more make the most a client may have.
	for range 2 {
		if _, stderr, err := create(t, manifest(namespace, clientName, true, false)); err != nil {
			t.Fatalf("kubectl create: %v\n%s", err, stderr)
		}
	}
	_, stderr, err = create(t, manifest(namespace, clientName, true, false))
	refused(t, stderr, err, "BadRequest", "OIDCClient "+clientName+" has too many secrets, spec.revokeOldSecrets must be true")
	out, stderr, err = create(t, manifest(namespace, clientName, false, true), "-o", "jsonpath={.status.totalClientSecrets}")
	if err != nil || out != "1" {
		t.Errorf("revoking with kubectl: %v %q %s, want 1 secret left", err, out, stderr)
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
		BindAddress: net.ParseIP("127.0.0.1"), Port: port, Kubeconfig: cp.KubeconfigPath, Title: "Pinniped Supervisor", Discovery: kube.Discovery(),
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
