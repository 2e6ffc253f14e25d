package cmdtrace

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"sealion.dev/cli/pkg/oidclogin"
)

// A command run with TRACEPARENT sends it on with each request to an issuer, so that the servers'
// spans join the caller's trace; without one, or with a malformed one, it sends none.
func TestJoinCarriesTheCallersTrace(t *testing.T) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	var got []string
	issuer := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Traceparent")+"|"+r.Header.Get("Tracestate"))
	}))
	defer issuer.Close()
	client, err := oidclogin.NewHTTPClient(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"TRACEPARENT": parent, "TRACESTATE": "vendor=x"}, parent + "|vendor=x"},
		{map[string]string{}, "|"},
		{map[string]string{"TRACEPARENT": "00-" + "4BF92F3577B34DA6A3CE929D0E0E4736" + "-00f067aa0ba902b7-01"}, "|"},
	} {
		got = nil
		ctx := Join(context.Background(), func(k string) string { return tt.env[k] })
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, issuer.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if len(got) != 1 || got[0] != tt.want {
			t.Errorf("env %v: the issuer got traceparent|tracestate %q, want %q", tt.env, got, tt.want)
		}
	}
}
