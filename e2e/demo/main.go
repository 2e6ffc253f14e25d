// Command demo starts a local cluster with the Concierge and the local-user-authenticator, logs a
// demo user in through a TokenCredentialRequest, and shows kubectl working with the short-lived
// certificate it got back: the project's main job on one machine (`make demo`). The cluster lives
// until the demo is interrupted, then it is deleted; `make demo-down` removes one left behind.
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/crypto/bcrypt"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
	"sealion.dev/e2e/steps"
	"sealion.dev/providers"
	"sealion.dev/providers/all"
)

const clusterName = "sealion-demo"

func main() {
	providerName := flag.String("provider", "kubeadm", "cluster provider: "+strings.Join(all.Names, ", "))
	down := flag.Bool("down", false, "delete the demo cluster instead")
	out := flag.String("out", steps.RepoPath("_output/demo"), "folder for the demo user's kubeconfig")
	flag.Parse()
	if err := run(*providerName, *down, *out); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

func run(providerName string, down bool, out string) error {
	// Interrupting the demo deletes the cluster: its containerd and kubelet live in this process.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p, err := all.New(providerName, all.Options{Progress: os.Stderr})
	if err != nil {
		return err
	}
	if down {
		return p.Delete(ctx, clusterName)
	}

	password := randomPassword()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return err
	}
	cfg := envconf.New()
	setup := []env.Func{
		step("create a "+providerName+" cluster", steps.CreateCluster(p, clusterName, providers.CreateOptions{})),
		step("load the server image", steps.LoadImages(steps.RepoPath("_output/images/pinniped-server.tar"))),
	}
	setup = append(setup, stepAll("install the local-user-authenticator", steps.InstallLocalUserAuthenticator())...)
	setup = append(setup, stepAll("install the Concierge", steps.InstallConcierge())...)
	setup = append(setup,
		step("create user pinny in group demo-viewers, who may view everything", steps.ApplyManifest(userManifest(hash))),
		step("trust the local-user-authenticator with a WebhookAuthenticator", webhookAuthenticator),
	)
	defer func() {
		fmt.Println("\n==> deleting the demo cluster")
		if err := p.Delete(context.WithoutCancel(ctx), clusterName); err != nil {
			fmt.Fprintf(os.Stderr, "demo: deleting the cluster: %v (make demo-down retries)\n", err)
		}
	}()
	for _, f := range setup {
		if ctx, err = f(ctx, cfg); err != nil {
			return err
		}
	}

	fmt.Println("\n==> pinny logs in: a TokenCredentialRequest exchanges the password for a certificate")
	cred, err := exchange(ctx, cfg, "pinny:"+password)
	if err != nil {
		return err
	}
	kubeconfig, err := writeKubeconfig(cfg.KubeconfigFile(), cred, out)
	if err != nil {
		return err
	}
	for _, args := range [][]string{{"auth", "whoami"}, {"get", "pods", "-n", "pinniped-concierge"}, {"get", "secrets", "-n", "kube-system"}} {
		fmt.Printf("\n$ kubectl --kubeconfig %s %s\n", kubeconfig, strings.Join(args, " "))
		o, err := steps.Kubectl(ctx, kubeconfig, "", args...)
		fmt.Print(o)
		if err != nil {
			fmt.Println(err) // the last one is refused by RBAC, as it should be
		}
	}
	fmt.Printf(`
The Concierge picked its strategy (kubectl get credentialissuer -o yaml shows it) and signed a
certificate for pinny that the API server accepts for %s. Try it:

  %s --kubeconfig %s get pods -A

pinny's password is %q. Press Ctrl-C to delete the cluster.
`, time.Until(cred.ExpirationTimestamp.Time).Round(time.Minute), kubectlPath(), kubeconfig, password)
	<-ctx.Done()
	return nil
}

func step(what string, f env.Func) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		fmt.Printf("==> %s\n", what)
		return f(ctx, cfg)
	}
}

func stepAll(what string, fs []env.Func) []env.Func {
	out := []env.Func{step(what, func(ctx context.Context, _ *envconf.Config) (context.Context, error) { return ctx, nil })}
	return append(out, fs...)
}

func userManifest(hash []byte) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: pinny, namespace: local-user-authenticator}
stringData: {groups: demo-viewers}
data: {passwordHash: %s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: demo-viewers-view}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: demo-viewers}]
`, base64.StdEncoding.EncodeToString(hash))
}

// webhookAuthenticator points the Concierge at the local-user-authenticator, trusting the CA it published.
func webhookAuthenticator(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	ca, err := steps.Kubectl(ctx, cfg.KubeconfigFile(), "", "get", "secret", "-n", "local-user-authenticator", "api-serving-cert", "-o", "jsonpath={.data.caCertificate}")
	if err != nil {
		return ctx, err
	}
	if _, err := steps.Kubectl(ctx, cfg.KubeconfigFile(), fmt.Sprintf(`apiVersion: authentication.concierge.pinniped.dev/v1alpha1
kind: WebhookAuthenticator
metadata: {name: local-users}
spec:
  endpoint: https://local-user-authenticator.local-user-authenticator.svc/authenticate
  tls: {certificateAuthorityData: %s}
`, ca), "apply", "-f", "-"); err != nil {
		return ctx, err
	}
	return steps.WaitFor(2*time.Minute, "jsonpath={.status.phase}=Ready", "webhookauthenticator/local-users")(ctx, cfg)
}

func exchange(ctx context.Context, cfg *envconf.Config, token string) (*loginv1alpha1.ClusterCredential, error) {
	body, err := json.Marshal(map[string]any{
		"apiVersion": "login.concierge.pinniped.dev/v1alpha1",
		"kind":       "TokenCredentialRequest",
		"spec": map[string]any{"token": token,
			"authenticator": map[string]any{"apiGroup": authv1alpha1.GroupName, "kind": "WebhookAuthenticator", "name": "local-users"}},
	})
	if err != nil {
		return nil, err
	}
	var resp loginv1alpha1.TokenCredentialRequest
	// The signing key may still be on its way from the kube cert agent: retry for a while.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		o, err := steps.Kubectl(ctx, cfg.KubeconfigFile(), string(body), "create", "-f", "-", "-o", "json")
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(o), &resp); err != nil {
			return nil, err
		}
		if resp.Status.Credential != nil {
			return resp.Status.Credential, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no credential: %v (kubectl get credentialissuer -o yaml says why)", resp.Status.Message)
		}
		time.Sleep(3 * time.Second)
	}
}

// writeKubeconfig writes a kubeconfig for the admin's cluster with the user's certificate.
func writeKubeconfig(admin string, cred *loginv1alpha1.ClusterCredential, dir string) (string, error) {
	a, err := clientcmd.LoadFromFile(admin)
	if err != nil {
		return "", err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[clusterName] = a.Clusters[a.Contexts[a.CurrentContext].Cluster]
	kc.AuthInfos["pinny"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte(cred.ClientCertificateData), ClientKeyData: []byte(cred.ClientKeyData)}
	kc.Contexts["pinny@"+clusterName] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: "pinny"}
	kc.CurrentContext = "pinny@" + clusterName
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, clientcmd.WriteToFile(*kc, path)
}

func kubectlPath() string {
	if dir, err := steps.KubeBinDir(); err == nil {
		return filepath.Join(dir, "kubectl")
	}
	return "kubectl"
}

func randomPassword() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
