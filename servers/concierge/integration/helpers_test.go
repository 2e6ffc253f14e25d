package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
)

// kubeconfig writes a kubeconfig for the test API server with the given client certificate, or
// with no credentials at all (an anonymous user) when certPEM is empty.
func kubeconfig(t *testing.T, certPEM, keyPEM string) string {
	t.Helper()
	ca, err := os.ReadFile(env.cp.ClientCACertFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: env.cp.URL, CertificateAuthorityData: ca}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte(certPEM), ClientKeyData: []byte(keyPEM)}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "user"}
	cfg.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// kubectlAs runs kubectl with the given kubeconfig and returns stdout, or the error with stderr.
func kubectlAs(ctx context.Context, kubeconfigPath, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, env.cp.KubectlPath, append([]string{"--kubeconfig", kubeconfigPath}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// exchange creates a TokenCredentialRequest anonymously through the real aggregation layer, as the
// pinniped CLI does before it has any credential (kubectl would prompt for a password instead).
func exchange(t *testing.T, kind, name, token string) *loginv1alpha1.TokenCredentialRequest {
	t.Helper()
	resp, err := createTokenCredentialRequest(kind, name, token)
	if err != nil {
		t.Fatalf("creating a TokenCredentialRequest: %v", err)
	}
	return resp
}

// createTokenCredentialRequest sends, anonymously, a TokenCredentialRequest of token for the
// authenticator kind/name.
func createTokenCredentialRequest(kind, name, token string) (*loginv1alpha1.TokenCredentialRequest, error) {
	req := &loginv1alpha1.TokenCredentialRequest{Spec: loginv1alpha1.TokenCredentialRequestSpec{
		Token:         token,
		Authenticator: corev1.TypedLocalObjectReference{APIGroup: ptr.To(authv1alpha1.GroupName), Kind: kind, Name: name},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return env.anonymous.LoginV1alpha1().TokenCredentialRequests().Create(ctx, req, metav1.CreateOptions{})
}

// requireFailed checks the uniform failure: the generic message and no credential.
func requireFailed(t *testing.T, resp *loginv1alpha1.TokenCredentialRequest) {
	t.Helper()
	if resp.Status.Credential != nil {
		t.Fatalf("got a credential, want none")
	}
	if resp.Status.Message == nil || *resp.Status.Message != "authentication failed" {
		t.Fatalf("status.message = %v, want \"authentication failed\"", resp.Status.Message)
	}
}

// whoami asks the real kube-apiserver who the certificate belongs to (a SelfSubjectReview).
func whoami(t *testing.T, resp *loginv1alpha1.TokenCredentialRequest) (string, []string) {
	t.Helper()
	cred := resp.Status.Credential
	if cred == nil {
		t.Fatalf("no credential; message %v", resp.Status.Message)
	}
	if d := time.Until(cred.ExpirationTimestamp.Time); d <= 4*time.Minute || d > 5*time.Minute+10*time.Second {
		t.Errorf("credential expires in %s, want about 5 minutes", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := kubectlAs(ctx, kubeconfig(t, cred.ClientCertificateData, cred.ClientKeyData), "", "auth", "whoami", "-o", "json")
	if err != nil {
		t.Fatalf("kubectl auth whoami with the issued certificate: %v", err)
	}
	var review struct {
		Status struct {
			UserInfo struct {
				Username string   `json:"username"`
				Groups   []string `json:"groups"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &review); err != nil {
		t.Fatal(err)
	}
	return review.Status.UserInfo.Username, review.Status.UserInfo.Groups
}

// createJWTAuthenticator creates the object and deletes it when the test ends.
func createJWTAuthenticator(t *testing.T, name string, spec authv1alpha1.JWTAuthenticatorSpec) {
	t.Helper()
	client := env.concierge.AuthenticationV1alpha1().JWTAuthenticators()
	obj := &authv1alpha1.JWTAuthenticator{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if _, err := client.Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating JWTAuthenticator %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := client.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting JWTAuthenticator %s: %v", name, err)
		}
	})
}

func createWebhookAuthenticator(t *testing.T, name string, spec authv1alpha1.WebhookAuthenticatorSpec) {
	t.Helper()
	client := env.concierge.AuthenticationV1alpha1().WebhookAuthenticators()
	obj := &authv1alpha1.WebhookAuthenticator{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if _, err := client.Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating WebhookAuthenticator %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := client.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting WebhookAuthenticator %s: %v", name, err)
		}
	})
}

// waitForJWTStatus polls until the authenticator's status satisfies ok, and returns it.
func waitForJWTStatus(t *testing.T, name string, ok func(authv1alpha1.JWTAuthenticatorStatus) bool) authv1alpha1.JWTAuthenticatorStatus {
	t.Helper()
	var last authv1alpha1.JWTAuthenticatorStatus
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		obj, err := env.concierge.AuthenticationV1alpha1().JWTAuthenticators().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = obj.Status
		return ok(last), nil
	})
	if err != nil {
		t.Fatalf("JWTAuthenticator %s: status never matched; last %+v%s", name, last, env.serverLogs())
	}
	return last
}

func waitForWebhookStatus(t *testing.T, name string, ok func(authv1alpha1.WebhookAuthenticatorStatus) bool) authv1alpha1.WebhookAuthenticatorStatus {
	t.Helper()
	var last authv1alpha1.WebhookAuthenticatorStatus
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		obj, err := env.concierge.AuthenticationV1alpha1().WebhookAuthenticators().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = obj.Status
		return ok(last), nil
	})
	if err != nil {
		t.Fatalf("WebhookAuthenticator %s: status never matched; last %+v%s", name, last, env.serverLogs())
	}
	return last
}

// condition finds a condition by type.
func condition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

func hasCondition(typ string, status metav1.ConditionStatus, reason string) func([]metav1.Condition) bool {
	return func(conds []metav1.Condition) bool {
		c := condition(conds, typ)
		return c != nil && c.Status == status && c.Reason == reason
	}
}

// tlsInvalidURLJudged checks the conditions of an authenticator whose TLS configuration is
// invalid: TLSConfigurationValid False, the URL's condition urlType judged on its own (as upstream
// does), and the next step, next, not run.
func tlsInvalidURLJudged(urlType string, status metav1.ConditionStatus, reason, message, next string) func([]metav1.Condition) bool {
	return func(conds []metav1.Condition) bool {
		u := condition(conds, urlType)
		return hasCondition("TLSConfigurationValid", metav1.ConditionFalse, "InvalidTLSConfig")(conds) &&
			u != nil && u.Status == status && u.Reason == reason && u.Message == message &&
			hasCondition(next, metav1.ConditionUnknown, "UnableToValidate")(conds)
	}
}

func b64(data []byte) string { return base64.StdEncoding.EncodeToString(data) }
