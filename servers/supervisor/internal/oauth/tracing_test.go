package oauth

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"golang.org/x/oauth2"

	"sealion.dev/core/tracing"
	"sealion.dev/servers/supervisor/internal/issuer"
)

// TestTracedCLIPasswordLogin follows one CLI login through a Supervisor that traces, as the
// servers' configuration makes it (tracing.Handler in front of the issuers' routes): the CLI's
// trace goes on in a span per endpoint, named by its route and FederationDomain, and the call to
// the directory is a span of the authorize request. No span records the password, the code or
// the tokens.
func TestTracedCLIPasswordLogin(t *testing.T) {
	h, _ := newLDAPHarness(t, issuer.TypeLDAP)
	rec := tracetest.NewSpanRecorder()
	// As serverboot's provider with samplingRatePerMillion unset: only what a client samples.
	server := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())), sdktrace.WithSpanProcessor(rec))
	h.server.Config.Handler = tracing.Handler(h.mux, server, "pinniped-supervisor")
	cliTracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, login := cliTracer.Tracer("cli").Start(context.Background(), "pinniped login oidc")
	cli := &http.Client{
		Transport:     tracing.Transport(h.server.Client().Transport),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}

	l := newLogin()
	authURL := h.cli().AuthCodeURL(l.state, oidc.Nonce(l.nonce), oauth2.S256ChallengeOption(l.verifier), oauth2.SetAuthURLParam("pinniped_idp_name", ldapIDPName))
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	req.Header.Set(usernameHeader, "pinny")
	req.Header.Set(passwordHeader, "pinny-password")
	resp, err := cli.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	loc, err := resp.Location()
	if err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("authorize answered %s, no code", resp.Status)
	}
	code := loc.Query().Get("code")
	tok, err := h.cli().Exchange(context.WithValue(ctx, oauth2.HTTPClient, cli), code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	login.End()

	byName := map[string]sdktrace.ReadOnlySpan{}
	var names []string
	for _, s := range rec.Ended() {
		byName[s.Name()] = s
		names = append(names, s.Name())
		if s.SpanContext().TraceID() != login.SpanContext().TraceID() {
			t.Errorf("span %s is in another trace than the login's", s.Name())
		}
		for _, kv := range append(s.Attributes(), s.Resource().Attributes()...) {
			v := kv.Value.Emit()
			for _, secret := range []string{"pinny-password", code, tok.AccessToken, tok.RefreshToken, tok.Extra("id_token").(string)} {
				if strings.Contains(v, secret) {
					t.Errorf("span %s records a secret in %s", s.Name(), kv.Key)
				}
			}
		}
	}
	authorize, token, directory := byName["GET /oauth2/authorize"], byName["POST /oauth2/token"], byName["upstream password"]
	if authorize == nil || token == nil || directory == nil {
		t.Fatalf("spans %v; want GET /oauth2/authorize, POST /oauth2/token and upstream password", names)
	}
	if directory.Parent().SpanID() != authorize.SpanContext().SpanID() {
		t.Error("the directory call is not the authorize request's child")
	}
	attrs := func(s sdktrace.ReadOnlySpan) []string {
		var out []string
		for _, kv := range s.Attributes() {
			if strings.HasPrefix(string(kv.Key), "pinniped.") {
				out = append(out, string(kv.Key)+"="+kv.Value.Emit())
			}
		}
		slices.Sort(out)
		return out
	}
	if got := attrs(directory); !slices.Equal(got, []string{"pinniped.identity_provider_type=ldap", "pinniped.result=success"}) {
		t.Errorf("upstream password span attributes %v", got)
	}
	if got := attrs(token); !slices.Equal(got, []string{"pinniped.federation_domain=fd"}) {
		t.Errorf("token span attributes %v", got)
	}
}
