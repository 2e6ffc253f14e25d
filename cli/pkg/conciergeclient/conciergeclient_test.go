package conciergeclient

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fakeConcierge answers TokenCredentialRequests at the path for suffix, recording the request.
func fakeConcierge(t *testing.T, suffix string, respond func(body map[string]any) (int, string)) (*httptest.Server, *map[string]any) {
	t.Helper()
	var got map[string]any
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		want := "/apis/login.concierge." + suffix + "/v1alpha1/tokencredentialrequests"
		if r.Method != http.MethodPost || r.URL.Path != want {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		if r.Header.Get("Authorization") != "" {
			t.Errorf("the request carried credentials: %q", r.Header.Get("Authorization"))
		}
		data, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(data, &got); err != nil {
			t.Errorf("decoding the request: %v", err)
		}
		code, body := respond(got)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

func caOf(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

func TestExchangeToken(t *testing.T) {
	success := func(suffix string) func(map[string]any) (int, string) {
		return func(map[string]any) (int, string) {
			return http.StatusCreated, `{"apiVersion":"login.concierge.` + suffix + `/v1alpha1","kind":"TokenCredentialRequest",
"status":{"credential":{"expirationTimestamp":"2025-07-01T12:05:00Z","clientCertificateData":"CERT","clientKeyData":"KEY"}}}`
		}
	}
	tests := []struct {
		name      string
		suffix    string
		respond   func(map[string]any) (int, string)
		wantErr   string
		wantGroup string
	}{
		{name: "default suffix", suffix: "pinniped.dev", respond: success("pinniped.dev"), wantGroup: "authentication.concierge.pinniped.dev"},
		{name: "custom suffix", suffix: "tuna.io", respond: success("tuna.io"), wantGroup: "authentication.concierge.tuna.io"},
		{
			name: "refused", suffix: "pinniped.dev",
			respond: func(map[string]any) (int, string) {
				return http.StatusCreated, `{"apiVersion":"login.concierge.pinniped.dev/v1alpha1","kind":"TokenCredentialRequest","status":{"message":"authentication failed"}}`
			},
			wantErr: "the Concierge refused the token: authentication failed",
		},
		{
			name: "empty status", suffix: "pinniped.dev",
			respond: func(map[string]any) (int, string) {
				return http.StatusCreated, `{"apiVersion":"login.concierge.pinniped.dev/v1alpha1","kind":"TokenCredentialRequest","status":{}}`
			},
			wantErr: "neither a credential nor a message",
		},
		{
			name: "API error", suffix: "pinniped.dev",
			respond: func(map[string]any) (int, string) {
				return http.StatusForbidden, `{"apiVersion":"v1","kind":"Status","status":"Failure","message":"anonymous may not","reason":"Forbidden","code":403}`
			},
			wantErr: "could not create a TokenCredentialRequest at https://127.0.0.1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, got := fakeConcierge(t, tt.suffix, tt.respond)
			c, err := New(Config{Endpoint: srv.URL, CABundle: caOf(srv), APIGroupSuffix: tt.suffix, AuthenticatorKind: KindWebhookAuthenticator, AuthenticatorName: "hook"})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cred, err := c.ExchangeToken(ctx, "secret-token")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cred.ClientCertificateData != "CERT" || cred.ClientKeyData != "KEY" || !cred.ExpirationTimestamp.Time.Equal(time.Date(2025, 7, 1, 12, 5, 0, 0, time.UTC)) {
				t.Errorf("credential = %+v", cred)
			}
			spec := (*got)["spec"].(map[string]any)
			auth := spec["authenticator"].(map[string]any)
			if spec["token"] != "secret-token" || auth["apiGroup"] != tt.wantGroup || auth["kind"] != KindWebhookAuthenticator || auth["name"] != "hook" {
				t.Errorf("request spec = %v", spec)
			}
		})
	}
}

func TestExchangeTokenUntrustedServer(t *testing.T) {
	srv, _ := fakeConcierge(t, "pinniped.dev", func(map[string]any) (int, string) { return http.StatusCreated, "{}" })
	c, err := New(Config{Endpoint: srv.URL, AuthenticatorKind: KindJWTAuthenticator, AuthenticatorName: "jwt"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExchangeToken(context.Background(), "t"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("err = %v, want a certificate verification error", err)
	}
}

func TestNewValidates(t *testing.T) {
	valid := Config{Endpoint: "https://example.com", AuthenticatorKind: KindJWTAuthenticator, AuthenticatorName: "a"}
	tests := []struct {
		name    string
		change  func(*Config)
		wantErr string
	}{
		{name: "valid", change: func(*Config) {}},
		{name: "http endpoint", change: func(c *Config) { c.Endpoint = "http://example.com" }, wantErr: "must be an https URL"},
		{name: "no endpoint", change: func(c *Config) { c.Endpoint = "" }, wantErr: "must be an https URL"},
		{name: "bad kind", change: func(c *Config) { c.AuthenticatorKind = "Foo" }, wantErr: "invalid authenticator kind"},
		{name: "no name", change: func(c *Config) { c.AuthenticatorName = "" }, wantErr: "authenticator name is required"},
		{name: "bad suffix", change: func(c *Config) { c.APIGroupSuffix = "nodot" }, wantErr: "invalid API group suffix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := valid
			tt.change(&cfg)
			_, err := New(cfg)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestAuthenticatorKind(t *testing.T) {
	for in, want := range map[string]string{"jwt": KindJWTAuthenticator, "webhook": KindWebhookAuthenticator, "JWT": ""} {
		got, err := AuthenticatorKind(in)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("AuthenticatorKind(%q) = %q, %v", in, got, err)
		}
	}
}
