package static

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sealion.dev/cli/internal/deps"
	"sealion.dev/cli/pkg/conciergeclient"
	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
)

var now = time.Date(2025, 7, 1, 12, 0, 0, 0, time.UTC)

type fakeExchange struct {
	calls []conciergeclient.Config
	token string
	err   error
}

func (f *fakeExchange) exchange(_ context.Context, cfg conciergeclient.Config, token string) (*loginv1alpha1.ClusterCredential, error) {
	f.calls = append(f.calls, cfg)
	f.token = token
	if f.err != nil {
		return nil, f.err
	}
	return &loginv1alpha1.ClusterCredential{
		ExpirationTimestamp:   metav1.NewTime(now.Add(5 * time.Minute)),
		ClientCertificateData: "CERT",
		ClientKeyData:         "KEY",
	}, nil
}

const execInfoV1 = `{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false,"cluster":{"server":"https://cluster.example:6443","certificate-authority-data":"Q0E="}}}`

func TestRun(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		exchErr    error
		wantErr    string
		wantAPI    string
		wantStatus map[string]any
		wantCfg    *conciergeclient.Config
		wantToken  string
	}{
		{
			name:       "token without the Concierge",
			args:       []string{"--token=abc"},
			wantAPI:    "client.authentication.k8s.io/v1beta1",
			wantStatus: map[string]any{"token": "abc"},
		},
		{
			name:       "token from the environment, v1 requested",
			args:       []string{"--token-env=MY_TOKEN"},
			env:        map[string]string{"MY_TOKEN": "from-env", "KUBERNETES_EXEC_INFO": execInfoV1},
			wantAPI:    "client.authentication.k8s.io/v1",
			wantStatus: map[string]any{"token": "from-env"},
		},
		{
			name: "Concierge exchange with explicit endpoint",
			args: []string{"--token=abc", "--enable-concierge", "--concierge-authenticator-type=webhook", "--concierge-authenticator-name=hook",
				"--concierge-endpoint=https://concierge.example", "--concierge-ca-bundle-data=UEVN", "--concierge-api-group-suffix=tuna.io", "--credential-cache="},
			wantAPI:    "client.authentication.k8s.io/v1beta1",
			wantStatus: map[string]any{"clientCertificateData": "CERT", "clientKeyData": "KEY", "expirationTimestamp": "2025-07-01T12:05:00Z"},
			wantCfg:    &conciergeclient.Config{Endpoint: "https://concierge.example", CABundle: []byte("PEM"), APIGroupSuffix: "tuna.io", AuthenticatorKind: "WebhookAuthenticator", AuthenticatorName: "hook"},
			wantToken:  "abc",
		},
		{
			name:       "Concierge endpoint from the cluster info",
			args:       []string{"--token=abc", "--enable-concierge", "--concierge-authenticator-type=jwt", "--concierge-authenticator-name=j", "--credential-cache="},
			env:        map[string]string{"KUBERNETES_EXEC_INFO": execInfoV1},
			wantAPI:    "client.authentication.k8s.io/v1",
			wantStatus: map[string]any{"clientCertificateData": "CERT", "clientKeyData": "KEY", "expirationTimestamp": "2025-07-01T12:05:00Z"},
			wantCfg:    &conciergeclient.Config{Endpoint: "https://cluster.example:6443", CABundle: []byte("CA"), APIGroupSuffix: "pinniped.dev", AuthenticatorKind: "JWTAuthenticator", AuthenticatorName: "j"},
			wantToken:  "abc",
		},
		{name: "no token", args: nil, wantErr: "one of --token or --token-env is required"},
		{name: "empty token env", args: []string{"--token-env=NOPE"}, wantErr: `--token-env variable "NOPE" is empty`},
		{name: "both token flags", args: []string{"--token=a", "--token-env=B"}, wantErr: "if any flags in the group [token token-env] are set none of the others can be"},
		{name: "bad authenticator type", args: []string{"--token=a", "--enable-concierge", "--concierge-authenticator-type=ldap", "--concierge-authenticator-name=x"}, wantErr: "--concierge-authenticator-type: invalid authenticator type"},
		{name: "no authenticator name", args: []string{"--token=a", "--enable-concierge", "--concierge-authenticator-type=jwt"}, wantErr: "--concierge-authenticator-name is required"},
		{name: "no endpoint anywhere", args: []string{"--token=a", "--enable-concierge", "--concierge-authenticator-type=jwt", "--concierge-authenticator-name=x"}, wantErr: "--concierge-endpoint is required"},
		{name: "bad CA data", args: []string{"--token=a", "--enable-concierge", "--concierge-authenticator-type=jwt", "--concierge-authenticator-name=x", "--concierge-endpoint=https://e", "--concierge-ca-bundle-data=!!"}, wantErr: "--concierge-ca-bundle-data: decoding"},
		{name: "bad exec info", args: []string{"--token=a"}, env: map[string]string{"KUBERNETES_EXEC_INFO": `{"apiVersion":"client.authentication.k8s.io/v1alpha1"}`}, wantErr: "supported are"},
		{
			name:    "exchange refused",
			args:    []string{"--token=a", "--enable-concierge", "--concierge-authenticator-type=jwt", "--concierge-authenticator-name=x", "--concierge-endpoint=https://e", "--credential-cache="},
			exchErr: errors.New("the Concierge refused the token: authentication failed"),
			wantErr: "could not complete the Concierge credential exchange: the Concierge refused the token: authentication failed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := &fakeExchange{err: tt.exchErr}
			out, errOut, err := execute(t, ex, tt.env, t.TempDir(), tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v (stderr %q)", err, errOut)
			}
			var got struct {
				APIVersion string         `json:"apiVersion"`
				Kind       string         `json:"kind"`
				Status     map[string]any `json:"status"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("output %q: %v", out, err)
			}
			if got.APIVersion != tt.wantAPI || got.Kind != "ExecCredential" {
				t.Errorf("got %s %s, want %s ExecCredential", got.APIVersion, got.Kind, tt.wantAPI)
			}
			if !equalJSON(got.Status, tt.wantStatus) {
				t.Errorf("status = %v, want %v", got.Status, tt.wantStatus)
			}
			if tt.wantCfg == nil {
				if len(ex.calls) != 0 {
					t.Errorf("unexpected exchange %+v", ex.calls)
				}
				return
			}
			if len(ex.calls) != 1 || !equalJSON(ex.calls[0], *tt.wantCfg) || ex.token != tt.wantToken {
				t.Errorf("exchange calls = %+v (token %q), want %+v (token %q)", ex.calls, ex.token, *tt.wantCfg, tt.wantToken)
			}
		})
	}
}

func TestRunUsesTheCredentialCache(t *testing.T) {
	home := t.TempDir()
	args := []string{"--token=abc", "--enable-concierge", "--concierge-authenticator-type=webhook", "--concierge-authenticator-name=hook"}
	env := map[string]string{"KUBERNETES_EXEC_INFO": execInfoV1}
	ex := &fakeExchange{}
	first, _, err := execute(t, ex, env, home, args)
	if err != nil {
		t.Fatal(err)
	}
	second, _, err := execute(t, ex, env, home, args)
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.calls) != 1 {
		t.Errorf("%d exchanges, want 1 (the second run should hit the cache)", len(ex.calls))
	}
	if first != second {
		t.Errorf("cached output differs:\n%s\n%s", first, second)
	}
	// Other arguments are another key.
	if _, _, err := execute(t, ex, env, home, append(args, "--concierge-api-group-suffix=tuna.io")); err != nil {
		t.Fatal(err)
	}
	if len(ex.calls) != 2 {
		t.Errorf("%d exchanges, want 2 after changing the arguments", len(ex.calls))
	}
}

// execute runs the command as kubectl would, with a fake exchange and home directory.
func execute(t *testing.T, ex *fakeExchange, env map[string]string, home string, args []string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	d := deps.Deps{
		Out: &out, ErrOut: &errOut,
		Now:           func() time.Time { return now },
		Getenv:        func(k string) string { return env[k] },
		Args:          append([]string{"login", "static"}, args...),
		HomeDir:       func() (string, error) { return home, nil },
		ExchangeToken: ex.exchange,
	}
	cmd := NewCommand(d)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
