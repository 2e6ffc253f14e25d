package whoami

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	kubetesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"sealion.dev/cli/internal/cmd/login/oidc"
	"sealion.dev/cli/internal/deps"
	"sealion.dev/cli/pkg/oidclogin"
	"sealion.dev/cli/pkg/sessioncache"
	identityv1alpha1 "sealion.dev/core/apis/concierge/identity/v1alpha1"
	conciergefake "sealion.dev/core/generated/concierge/clientset/versioned/fake"
)

func writeKubeconfig(t *testing.T) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["prod-cluster"] = &clientcmdapi.Cluster{Server: "https://prod.example:6443"}
	cfg.Clusters["dev-cluster"] = &clientcmdapi.Cluster{Server: "https://dev.example:6443"}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["prod"] = &clientcmdapi.Context{Cluster: "prod-cluster", AuthInfo: "u"}
	cfg.Contexts["dev"] = &clientcmdapi.Context{Cluster: "dev-cluster", AuthInfo: "u"}
	cfg.CurrentContext = "prod"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRun(t *testing.T) {
	answer := func(_ kubetesting.Action) (bool, runtime.Object, error) {
		return true, &identityv1alpha1.WhoAmIRequest{Status: identityv1alpha1.WhoAmIRequestStatus{
			KubernetesUserInfo: identityv1alpha1.KubernetesUserInfo{User: identityv1alpha1.UserInfo{Username: "pinny", Groups: []string{"devs", "system:authenticated"}}},
		}}, nil
	}
	notFound := func(_ kubetesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "identity.concierge.pinniped.dev", Resource: "whoamirequests"}, "")
	}
	tests := []struct {
		name    string
		args    []string
		reactor kubetesting.ReactionFunc
		want    string
		wantErr string
	}{
		{
			name: "text", reactor: answer,
			want: "Current cluster info:\n\nName: prod-cluster\nURL: https://prod.example:6443\n\nCurrent user info:\n\nUsername: pinny\nGroups: devs, system:authenticated\n",
		},
		{
			name: "other context", args: []string{"--kubeconfig-context=dev"}, reactor: answer,
			want: "Current cluster info:\n\nName: dev-cluster\nURL: https://dev.example:6443\n\nCurrent user info:\n\nUsername: pinny\nGroups: devs, system:authenticated\n",
		},
		{
			name: "yaml with a custom suffix", args: []string{"-o", "yaml", "--api-group-suffix=tuna.io"}, reactor: answer,
			want: "apiVersion: identity.concierge.tuna.io/v1alpha1\nkind: WhoAmIRequest\nmetadata: {}\nspec: {}\nstatus:\n  kubernetesUserInfo:\n    user:\n      groups:\n      - devs\n      - system:authenticated\n      username: pinny\n",
		},
		{
			name: "json", args: []string{"-o", "json"}, reactor: answer,
			want: "{\n  \"kind\": \"WhoAmIRequest\",\n  \"apiVersion\": \"identity.concierge.pinniped.dev/v1alpha1\",\n  \"metadata\": {},\n  \"spec\": {},\n  \"status\": {\n    \"kubernetesUserInfo\": {\n      \"user\": {\n        \"username\": \"pinny\",\n        \"groups\": [\n          \"devs\",\n          \"system:authenticated\"\n        ]\n      }\n    }\n  }\n}\n",
		},
		{name: "bad output", args: []string{"-o", "table"}, wantErr: `invalid output format "table"`},
		{name: "bad suffix", args: []string{"--api-group-suffix=nodot"}, wantErr: "invalid API group suffix"},
		{name: "unknown context", args: []string{"--kubeconfig-context=nope"}, wantErr: `context "nope"`},
		{name: "Concierge missing", reactor: notFound, wantErr: "is the Pinniped Concierge installed"},
		{
			name: "server error",
			reactor: func(kubetesting.Action) (bool, runtime.Object, error) {
				return true, nil, errors.New("connection refused")
			},
			wantErr: "could not create a WhoAmIRequest: connection refused",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := conciergefake.NewSimpleClientset()
			if tt.reactor != nil {
				fake.PrependReactor("create", "whoamirequests", tt.reactor)
			}
			var out bytes.Buffer
			d := deps.Deps{
				Out: &out, ErrOut: &out,
				NewConciergeClient: func(*rest.Config) (deps.ConciergeClient, error) { return fake, nil },
			}
			cmd := NewCommand(d)
			cmd.SetArgs(append([]string{"--kubeconfig", writeKubeconfig(t)}, tt.args...))
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			err := cmd.ExecuteContext(context.Background())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("output:\n%s\nwant:\n%s", out.String(), tt.want)
			}
		})
	}
}

// With a kubeconfig that logs in with "pinniped login oidc", the text output adds when the cached
// session ends, as the Supervisor said; without that, nothing is added.
func TestSessionEnd(t *testing.T) {
	now := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	cachePath := filepath.Join(dir, "sessions.yaml")
	args := []string{"login", "oidc", "--issuer=https://sso.example.com/prod", "--enable-concierge", "--session-cache=" + cachePath,
		"--upstream-identity-provider-name=corp-ldap", "--some-newer-flag=x"}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["prod-cluster"] = &clientcmdapi.Cluster{Server: "https://prod.example:6443"}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "pinniped", Args: args, APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.IfAvailableExecInteractiveMode}}
	cfg.Contexts["prod"] = &clientcmdapi.Context{Cluster: "prod-cluster", AuthInfo: "u"}
	cfg.CurrentContext = "prod"
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	key := oidclogin.SessionKeyOf(oidclogin.Config{Issuer: "https://sso.example.com/prod", ClientID: "pinniped-cli", Scopes: oidc.DefaultScopes, UpstreamIdentityProviderName: "corp-ldap"})
	whoami := func() string {
		t.Helper()
		fake := conciergefake.NewSimpleClientset()
		fake.PrependReactor("create", "whoamirequests", func(kubetesting.Action) (bool, runtime.Object, error) {
			return true, &identityv1alpha1.WhoAmIRequest{Status: identityv1alpha1.WhoAmIRequestStatus{
				KubernetesUserInfo: identityv1alpha1.KubernetesUserInfo{User: identityv1alpha1.UserInfo{Username: "pinny", Groups: []string{"devs"}}},
			}}, nil
		})
		var out bytes.Buffer
		cmd := NewCommand(deps.Deps{
			Out: &out, ErrOut: &out, Now: func() time.Time { return now }, Getenv: func(string) string { return "" },
			NewConciergeClient: func(*rest.Config) (deps.ConciergeClient, error) { return fake, nil },
		})
		cmd.SetArgs([]string{"--kubeconfig", kubeconfig})
		if err := cmd.ExecuteContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	const userInfo = "Current cluster info:\n\nName: prod-cluster\nURL: https://prod.example:6443\n\nCurrent user info:\n\nUsername: pinny\nGroups: devs\n"

	if got := whoami(); got != userInfo {
		t.Errorf("without a cached session:\n%s\nwant:\n%s", got, userInfo)
	}
	end := now.Add(3*time.Hour + 30*time.Minute)
	sessioncache.New(cachePath).PutToken(key, &oidclogin.Token{RefreshToken: &oidclogin.RefreshToken{Token: "rt", SessionExpiry: metav1.NewTime(end)}})
	want := userInfo + "\nCurrent session info:\n\nIssuer: https://sso.example.com/prod\nSession ends: " + end.Local().Format(time.RFC3339) + " (in 3h30m0s)\n"
	if got := whoami(); got != want {
		t.Errorf("with a cached session:\n%s\nwant:\n%s", got, want)
	}
}
