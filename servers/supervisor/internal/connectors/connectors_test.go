package connectors

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()
	_, refused := net.Dial("tcp", closed)
	_, httpRefused := http.Get("http://" + closed + "/")
	server := httptest.NewTLSServer(http.NotFoundHandler())
	defer server.Close()
	_, untrusted := http.Get(server.URL) // the default client does not trust the test CA
	if refused == nil || httpRefused == nil || untrusted == nil {
		t.Fatalf("the setup did not fail: %v, %v, %v", refused, httpRefused, untrusted)
	}

	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"refused connection", refused, true},
		{"refused HTTP request", httpRefused, true},
		{"wrapped", fmt.Errorf("connecting to LDAP server: %w", refused), true},
		{"every protocol refused", fmt.Errorf("connecting: %w", errors.Join(refused, refused)), true},
		{"one protocol reached", fmt.Errorf("connecting: %w", errors.Join(refused, untrusted)), false},
		{"unknown host", &net.DNSError{Err: "no such host", Name: "ldap.invalid", IsNotFound: true}, true},
		{"deadline", fmt.Errorf("reading: %w", context.DeadlineExceeded), true},
		{"untrusted certificate", untrusted, false},
		{"TLS alert from the server", &net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}, false},
		{"an answer", errors.New("oauth2: invalid_grant"), false},
	} {
		if got := Unreachable(tt.err); got != tt.want {
			t.Errorf("%s: Unreachable(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}
