package execcredential

import (
	"bytes"
	"strings"
	"testing"

	clientauthv1beta1 "k8s.io/client-go/pkg/apis/clientauthentication/v1beta1"
)

func TestReadInfo(t *testing.T) {
	tests := []struct {
		name       string
		env        string
		wantAPI    string
		wantServer string
		wantErr    string
	}{
		{name: "unset", wantAPI: "client.authentication.k8s.io/v1beta1"},
		{name: "v1 with cluster", env: `{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"cluster":{"server":"https://a"}}}`, wantAPI: "client.authentication.k8s.io/v1", wantServer: "https://a"},
		{name: "v1beta1 without cluster", env: `{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","spec":{}}`, wantAPI: "client.authentication.k8s.io/v1beta1"},
		{name: "unsupported", env: `{"apiVersion":"client.authentication.k8s.io/v1alpha1"}`, wantErr: "supported are"},
		{name: "garbage", env: `{`, wantErr: "parsing KUBERNETES_EXEC_INFO"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := ReadInfo(func(string) string { return tt.env })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			server := ""
			if info.Cluster != nil {
				server = info.Cluster.Server
			}
			if info.APIVersion != tt.wantAPI || server != tt.wantServer {
				t.Errorf("got %s %q", info.APIVersion, server)
			}
		})
	}
}

func TestWrite(t *testing.T) {
	var out bytes.Buffer
	if err := Write(&out, "client.authentication.k8s.io/v1", &clientauthv1beta1.ExecCredentialStatus{Token: "t"}); err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{},"status":{"token":"t"}}` + "\n"
	if out.String() != want {
		t.Errorf("got %s, want %s", out.String(), want)
	}
}
