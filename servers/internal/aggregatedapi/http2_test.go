package aggregatedapi

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

func TestCloseUnauthenticatedHTTP2(t *testing.T) {
	anonymous := &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	withCert := &tls.ConnectionState{PeerCertificates: []*x509.Certificate{{}}}
	tests := []struct {
		name      string
		proto     int
		tls       *tls.ConnectionState
		user      user.Info
		wantClose bool
	}{
		{name: "anonymous through the aggregator's authenticated connection", proto: 2, tls: withCert, user: anonymous},
		{name: "anonymous on a connection without a client certificate", proto: 2, tls: &tls.ConnectionState{}, user: anonymous, wantClose: true},
		{name: "no user known", proto: 2, tls: &tls.ConnectionState{}, wantClose: true},
		{name: "bearer-token user without a certificate", proto: 2, tls: &tls.ConnectionState{}, user: alice},
		{name: "anonymous over HTTP/1.1", proto: 1, tls: &tls.ConnectionState{}, user: anonymous},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/apis/login.concierge.pinniped.dev/v1alpha1/tokencredentialrequests", nil)
			r.ProtoMajor, r.TLS = tt.proto, tt.tls
			if tt.user != nil {
				r = r.WithContext(genericapirequest.WithUser(r.Context(), tt.user))
			}
			w := httptest.NewRecorder()
			closeUnauthenticatedHTTP2(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) })).ServeHTTP(w, r)
			if got := w.Header().Get("Connection") == "close"; got != tt.wantClose {
				t.Errorf("Connection: close = %v, want %v", got, tt.wantClose)
			}
			if w.Code != http.StatusCreated {
				t.Errorf("the wrapped handler did not run")
			}
		})
	}
}
