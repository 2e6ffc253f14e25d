package credential

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"k8s.io/apiserver/pkg/authentication/user"

	"sealion.dev/core/tracing"
	"sealion.dev/servers/concierge/internal/authncache"
	"sealion.dev/servers/internal/audit"
)

// Within a traced request, an exchange is a span with its authentication and its certificate as
// children, and says the authenticator's kind and the result: the failure's reason, which the
// client never learns, but no token, claim or name.
func TestExchangeSpans(t *testing.T) {
	users := fakeAuthenticators{"alice": {User: &user.DefaultInfo{Name: "alice", Groups: []string{"devs"}}}}
	known := authncache.Key{APIGroup: "authentication.concierge.pinniped.dev", Kind: "JWTAuthenticator", Name: "known"}
	for _, tt := range []struct {
		token, result string
		children      []string
	}{
		{"alice", "success", []string{"authenticate token", "issue client certificate"}},
		{"error", reasonAuthenticatorError, []string{"authenticate token"}},
		{"nobody", reasonNotAuthenticated, []string{"authenticate token"}},
	} {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		ctx, request := tp.Tracer("test").Start(context.Background(), "TokenCredentialRequest")
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		var log bytes.Buffer
		e := &Exchanger{Authenticators: users, Issuer: &fakeIssuer{now: now}, Now: func() time.Time { return now }, Audit: audit.New(&log, false)}
		_, _ = e.Exchange(ctx, known, tt.token)
		request.End()

		var exchange sdktrace.ReadOnlySpan
		var children []string
		for _, s := range rec.Ended() {
			if s.Name() == "exchange token" {
				exchange = s
			}
		}
		if exchange == nil {
			t.Fatalf("%s: no exchange span", tt.token)
		}
		if exchange.Parent().SpanID() != request.SpanContext().SpanID() {
			t.Errorf("%s: the exchange span is not the request's child", tt.token)
		}
		for _, s := range rec.Ended() {
			if s.Parent().SpanID() == exchange.SpanContext().SpanID() {
				children = append(children, s.Name())
			}
			for _, kv := range s.Attributes() {
				if v := kv.Value.Emit(); strings.Contains(v, "alice") || strings.Contains(v, "claim x") {
					t.Errorf("%s: span %s records %s=%s", tt.token, s.Name(), kv.Key, v)
				}
			}
		}
		if strings.Join(children, ",") != strings.Join(tt.children, ",") {
			t.Errorf("%s: children %v, want %v", tt.token, children, tt.children)
		}
		attrs := map[string]string{}
		for _, kv := range exchange.Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		if attrs["pinniped.authenticator_kind"] != "JWTAuthenticator" || attrs["pinniped.result"] != tt.result {
			t.Errorf("%s: exchange span attributes %v, want kind JWTAuthenticator and result %s", tt.token, attrs, tt.result)
		}
	}
}

// Outside a trace an exchange's spans cost nothing: no allocation on the measured path.
func TestExchangeSpansOutsideATraceCostNothing(t *testing.T) {
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		exchangeCtx, span := tracing.Start(ctx, "exchange token")
		_, authn := tracing.Start(exchangeCtx, "authenticate token")
		authn.End()
		endSpan(span, "JWTAuthenticator", reasonNotAuthenticated)
	})
	if allocs != 0 {
		t.Errorf("an exchange's spans outside a trace allocate %v times", allocs)
	}
}
