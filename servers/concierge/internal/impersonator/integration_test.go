package impersonator

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"maps"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"sealion.dev/servers/internal/drain"

	"sealion.dev/core/certauthority"
	"sealion.dev/core/testing/controlplane"
	"sealion.dev/servers/concierge/internal/satoken"
)

// staticBundle is a CABundleSource that never changes.
type staticBundle []byte

func (b staticBundle) CABundle() []byte { return b }

// proxyUnderTest is the proxy in front of a real kube-apiserver, as the Concierge runs it: it
// forwards as a ServiceAccount allowed only to impersonate, and accepts client certificates from
// a signer of its own and from the cluster's client CA.
type proxyUnderTest struct {
	url       string
	caPEM     []byte // the proxy's serving CA
	signer    *certauthority.CA
	clusterCA *certauthority.CA
	admin     kubernetes.Interface
	kubectl   string
	dir       string
	// auditLog is the kube-apiserver's audit log: every request's event, at level Metadata.
	auditLog string
	// stopping is the proxy's drain signal, which the Concierge's listener closes when it stops.
	stopping chan struct{}
}

// auditPolicy records every request's metadata (who, as whom, what), once it has an answer.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

func startProxy(t *testing.T) *proxyUnderTest {
	t.Helper()
	auditDir := t.TempDir()
	policy := filepath.Join(auditDir, "policy.yaml")
	require.NoError(t, os.WriteFile(policy, []byte(auditPolicy), 0o600))
	auditLog := filepath.Join(auditDir, "audit.log")
	cp := controlplane.StartForTest(t, controlplane.Options{ExtraAPIServerFlags: []string{
		"--audit-policy-file=" + policy, "--audit-log-path=" + auditLog, "--audit-log-mode=blocking",
	}})
	ctx := context.Background()
	admin, err := kubernetes.NewForConfig(cp.RESTConfig())
	require.NoError(t, err)

	// The proxy's ServiceAccount and what deploy/02-rbac.yaml grants it.
	_, err = admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "impersonation-proxy"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "impersonation-proxy"},
		Rules:      deployedProxyRules(t),
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	bind(t, admin, "", "impersonation-proxy", "impersonation-proxy", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "impersonation-proxy", Namespace: "default"})

	signer, err := certauthority.New("proxy signer", time.Hour)
	require.NoError(t, err)
	clusterCert, err := os.ReadFile(cp.ClientCACertFile)
	require.NoError(t, err)
	clusterKey, err := os.ReadFile(cp.ClientCAKeyFile)
	require.NoError(t, err)
	clusterCA, err := certauthority.Load(clusterCert, clusterKey)
	require.NoError(t, err)
	authn, err := DelegatedAuthenticator(admin, ClientCAs{
		Own:    CAContent("signer", staticBundle(signer.Bundle())),
		Others: []dynamiccertificates.CAContentProvider{CAContent("cluster", staticBundle(clusterCert))},
	})
	require.NoError(t, err)
	authz, err := DelegatedAuthorizer(admin)
	require.NoError(t, err)
	// As the Concierge does: the admin stands in for its ServiceAccount, which requests the tokens.
	asProxy := satoken.Config(cp.RESTConfig(), admin.CoreV1(), "default", "impersonation-proxy")
	handler, err := New(Config{APIServer: asProxy, Authenticator: authn, Authorizer: authz})
	require.NoError(t, err)
	front := httptest.NewUnstartedServer(handler)
	stopping := make(chan struct{})
	front.Config.BaseContext = func(net.Listener) context.Context { return drain.WithSignal(context.Background(), stopping) }
	front.EnableHTTP2 = true
	front.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	front.StartTLS()
	t.Cleanup(front.Close)

	return &proxyUnderTest{
		url: front.URL, stopping: stopping, signer: signer, clusterCA: clusterCA, admin: admin, kubectl: cp.KubectlPath, dir: t.TempDir(), auditLog: auditLog,
		caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: front.Certificate().Raw}),
	}
}

// kubeconfig writes a kubeconfig for the proxy with a client certificate for username (when
// token is empty) or with token.
func (p *proxyUnderTest) kubeconfig(t *testing.T, name, username string, groups []string, token string) string {
	t.Helper()
	auth := &clientcmdapi.AuthInfo{Token: token}
	if token == "" {
		certPEM, keyPEM, _, err := p.signer.IssueClientCert(username, groups, nil, time.Hour)
		require.NoError(t, err)
		auth = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: p.url, CertificateAuthorityData: p.caPEM}
	kc.AuthInfos["u"] = auth
	kc.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "u"}
	kc.CurrentContext = "proxy"
	path := filepath.Join(p.dir, name)
	require.NoError(t, clientcmd.WriteToFile(*kc, path))
	return path
}

// run runs kubectl with kubeconfig and stdin and returns stdout, or stderr as the error.
func (p *proxyUnderTest) run(kubeconfig, stdin string, args ...string) (string, error) {
	cmd := exec.Command(p.kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), &kubectlError{args: args, stderr: stderr.String()}
	}
	return string(out), nil
}

type kubectlError struct {
	args   []string
	stderr string
}

func (e *kubectlError) Error() string {
	return "kubectl " + strings.Join(e.args, " ") + ": " + strings.TrimSpace(e.stderr)
}

// whoami is kubectl auth whoami through the proxy.
func (p *proxyUnderTest) whoami(t *testing.T, kubeconfig string, args ...string) authenticationv1.UserInfo {
	t.Helper()
	out, err := p.run(kubeconfig, "", append([]string{"auth", "whoami", "-o", "json"}, args...)...)
	require.NoError(t, err)
	var review authenticationv1.SelfSubjectReview
	require.NoError(t, json.Unmarshal([]byte(out), &review))
	return review.Status.UserInfo
}

// deployedProxyRules are the rules deploy/02-rbac.yaml grants the proxy's ServiceAccount.
func deployedProxyRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	manifest, err := os.ReadFile(filepath.Join("..", "..", "deploy", "02-rbac.yaml"))
	require.NoError(t, err)
	for _, doc := range strings.Split(string(manifest), "\n---\n") {
		var role rbacv1.ClusterRole
		require.NoError(t, yaml.Unmarshal([]byte(doc), &role))
		if role.Kind == "ClusterRole" && role.Name == "pinniped-concierge-impersonation-proxy" {
			return role.Rules
		}
	}
	t.Fatal("deploy/02-rbac.yaml has no ClusterRole pinniped-concierge-impersonation-proxy")
	return nil
}

func bind(t *testing.T, admin kubernetes.Interface, ns, name, clusterRole string, subject rbacv1.Subject) {
	t.Helper()
	ctx := context.Background()
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole}
	var err error
	if ns == "" {
		_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: ref, Subjects: []rbacv1.Subject{subject},
		}, metav1.CreateOptions{})
	} else {
		_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: ref, Subjects: []rbacv1.Subject{subject},
		}, metav1.CreateOptions{})
	}
	require.NoError(t, err)
}

func serviceAccountToken(t *testing.T, admin kubernetes.Interface, ns, name string) string {
	t.Helper()
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return tr.Status.Token
}

func TestProxyAgainstKubeAPIServer(t *testing.T) {
	p := startProxy(t)
	ctx := context.Background()
	_, err := p.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "work"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// The aggregated edit and view roles stay empty without kube-controller-manager: use our own.
	for name, verbs := range map[string][]string{"edit": {"*"}, "view": {"get", "list", "watch"}} {
		_, err = p.admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "work-" + name},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"", "apps"}, Resources: []string{"configmaps", "deployments"}, Verbs: verbs},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	bind(t, p.admin, "work", "seals-edit", "work-edit", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "seals"})
	pinny := p.kubeconfig(t, "pinny", "pinny", []string{"seals"}, "")

	t.Run("kubectl apply and delete", func(t *testing.T) {
		manifest := `apiVersion: v1
kind: ConfigMap
metadata: {name: greeting, namespace: work}
data: {greeting: hello}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: work}
spec:
  replicas: 1
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec: {containers: [{name: app, image: example.invalid/app}]}
`
		_, err := p.run(pinny, manifest, "apply", "-f", "-")
		require.NoError(t, err)
		_, err = p.run(pinny, strings.Replace(manifest, "hello", "hello again", 1), "apply", "--server-side", "--force-conflicts", "-f", "-")
		require.NoError(t, err)
		cm, err := p.admin.CoreV1().ConfigMaps("work").Get(ctx, "greeting", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "hello again", cm.Data["greeting"])
		_, err = p.run(pinny, manifest, "delete", "-f", "-")
		require.NoError(t, err)
		_, err = p.admin.AppsV1().Deployments("work").Get(ctx, "app", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "the Deployment outlived kubectl delete: %v", err)
	})

	t.Run("nested impersonation records who asked", func(t *testing.T) {
		_, err := p.admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "impersonate-alice"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"users"}, Verbs: []string{"impersonate"}, ResourceNames: []string{"alice"}},
				{APIGroups: []string{""}, Resources: []string{"groups"}, Verbs: []string{"impersonate"}, ResourceNames: []string{"devs"}},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		bind(t, p.admin, "", "pinny-impersonates-alice", "impersonate-alice", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "pinny"})
		bind(t, p.admin, "work", "devs-view", "work-view", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "devs"})

		var who authenticationv1.UserInfo
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			out, err := p.run(pinny, "", "auth", "whoami", "-o", "json", "--as=alice", "--as-group=devs")
			if err != nil {
				return false, nil // the proxy caches denials for a few seconds
			}
			var review authenticationv1.SelfSubjectReview
			require.NoError(t, json.Unmarshal([]byte(out), &review))
			who = review.Status.UserInfo
			return true, nil
		}))
		assert.Equal(t, "alice", who.Username)
		assert.ElementsMatch(t, []string{"devs", "system:authenticated"}, who.Groups)
		require.Len(t, who.Extra[OriginalUserInfoExtraKey], 1)
		var asker authenticationv1.UserInfo
		require.NoError(t, json.Unmarshal([]byte(who.Extra[OriginalUserInfoExtraKey][0]), &asker))
		assert.Equal(t, "pinny", asker.Username)
		assert.Equal(t, []string{"seals", "system:authenticated"}, asker.Groups)
		assert.Contains(t, asker.Extra, "authentication.kubernetes.io/credential-id", "the whole authenticated user is recorded")

		_, err = p.run(pinny, "", "get", "configmaps", "-n", "work", "--as=alice", "--as-group=devs")
		assert.NoError(t, err, "alice in devs may view")
		_, err = p.run(pinny, "", "create", "configmap", "x", "-n", "work", "--as=alice", "--as-group=devs")
		assert.ErrorContains(t, err, `User "alice" cannot create`, "the request acts as alice, not as pinny who may edit")
		// --raw shows the proxy's own refusal, which kubectl's discovery would hide.
		_, err = p.run(pinny, "", "get", "--raw", "/api/v1/namespaces/work/configmaps", "--as=bob")
		assert.ErrorContains(t, err, `User "pinny" cannot impersonate resource "users"`)
		_, err = p.run(pinny, "", "get", "--raw", "/api/v1/namespaces/work/configmaps", "--as=alice", "--as-group=system:masters")
		assert.ErrorContains(t, err, `User "pinny" cannot impersonate resource "groups"`)
	})

	t.Run("a ServiceAccount token acts as the ServiceAccount", func(t *testing.T) {
		sa, err := p.admin.CoreV1().ServiceAccounts("work").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		bind(t, p.admin, "work", "robot-view", "work-view", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "robot", Namespace: "work"})
		robot := p.kubeconfig(t, "robot", "", nil, serviceAccountToken(t, p.admin, "work", "robot"))

		who := p.whoami(t, robot)
		assert.Equal(t, "system:serviceaccount:work:robot", who.Username)
		assert.Equal(t, string(sa.UID), who.UID)
		assert.Contains(t, who.Groups, "system:serviceaccounts:work")
		assert.NotContains(t, who.Extra, OriginalUserInfoExtraKey)
		assert.True(t, slices.ContainsFunc(slices.Collect(maps.Keys(who.Extra)), func(k string) bool { return strings.HasPrefix(k, "authentication.kubernetes.io/") }),
			"the kube-apiserver sees the token's own extras: %v", who.Extra)
		_, err = p.run(robot, "", "get", "configmaps", "-n", "work")
		assert.NoError(t, err)
		_, err = p.run(robot, "", "get", "configmaps", "-n", "default")
		assert.ErrorContains(t, err, "Forbidden")
		_, err = p.run(p.kubeconfig(t, "forged", "", nil, "not-a-token"), "", "get", "configmaps", "-n", "work")
		assert.ErrorContains(t, err, "Unauthorized")
	})
}
