package integration

import (
	"context"
	"strings"
	"testing"
)

// TestCRDValidation checks that the installed CRDs refuse invalid objects with a clear message.
func TestCRDValidation(t *testing.T) {
	tests := map[string]struct {
		manifest string
		want     string // a fragment of the API server's error, or "" for accepted
	}{
		"valid JWTAuthenticator": {manifest: `
apiVersion: authentication.concierge.pinniped.dev/v1alpha1
kind: JWTAuthenticator
metadata: {name: crd-valid}
spec: {issuer: "https://issuer.example.com", audience: "a"}`},
		"http issuer": {manifest: `
apiVersion: authentication.concierge.pinniped.dev/v1alpha1
kind: JWTAuthenticator
metadata: {name: crd-http}
spec: {issuer: "http://issuer.example.com", audience: "a"}`, want: "spec.issuer"},
		"missing audience": {manifest: `
apiVersion: authentication.concierge.pinniped.dev/v1alpha1
kind: JWTAuthenticator
metadata: {name: crd-noaud}
spec: {issuer: "https://issuer.example.com"}`, want: "spec.audience"},
		"webhook over http": {manifest: `
apiVersion: authentication.concierge.pinniped.dev/v1alpha1
kind: WebhookAuthenticator
metadata: {name: crd-webhook}
spec: {endpoint: "http://hook.example.com"}`, want: "spec.endpoint"},
		"bad CA source kind": {manifest: `
apiVersion: authentication.concierge.pinniped.dev/v1alpha1
kind: WebhookAuthenticator
metadata: {name: crd-source}
spec: {endpoint: "https://hook.example.com", tls: {certificateAuthorityDataSource: {kind: Pod, name: x, key: y}}}`, want: "kind"},
		"bad impersonation proxy mode": {manifest: `
apiVersion: config.concierge.pinniped.dev/v1alpha1
kind: CredentialIssuer
metadata: {name: crd-ci}
spec: {impersonationProxy: {mode: sometimes, service: {type: LoadBalancer}}}`, want: "spec.impersonationProxy.mode"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			_, err := env.kubectl(ctx, []byte(tt.manifest), "create", "-f", "-")
			if tt.want == "" {
				if err != nil {
					t.Fatalf("a valid object was refused: %v", err)
				}
				_, _ = env.kubectl(ctx, []byte(tt.manifest), "delete", "-f", "-")
				return
			}
			if err == nil {
				_, _ = env.kubectl(ctx, []byte(tt.manifest), "delete", "-f", "-")
				t.Fatal("an invalid object was accepted")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error does not name %q: %v", tt.want, err)
			}
		})
	}
}
