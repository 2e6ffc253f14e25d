package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"sealion.dev/core/certauthority"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/discovery"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
	"sealion.dev/servers/supervisor/internal/signingkeys"
	"sealion.dev/servers/supervisor/internal/sni"
	"sealion.dev/servers/supervisor/internal/tokenseal"
)

// tlsStateServer is the HTTPS listener of a Supervisor serving, on loopback, an issuer at a
// hostname and one at the loopback address, with the certificates a test sets.
type tlsStateServer struct {
	addr  string
	certs *sni.Certificates
	// hostIssuer and ipIssuer are the issuers' URLs, with the listener's port.
	hostIssuer, ipIssuer string
}

const issuerHost = "issuer.example.com"

func newTLSStateServer(t *testing.T) *tlsStateServer {
	t.Helper()
	c, _ := testConfig(t, minimalFile+`endpoints:
  https: {network: tcp, address: "127.0.0.1:0"}
  http: {network: disabled}
`)
	c.ShutdownDelay = time.Millisecond
	certs, err := sni.New()
	if err != nil {
		t.Fatal(err)
	}
	storage := sessions.NewStorage(fake.NewClientset().CoreV1().Secrets("supervisor"), &connectors.Registry{}, tokenseal.NewRing())
	mux := issuer.NewMux(discovery.Endpoints{}, oauth.New(storage, &connectors.Registry{}))
	listeners, err := c.Complete().listen(mux, certs.GetCertificate, &readiness{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	listeners[0].serve(ctx, errc)
	t.Cleanup(func() {
		cancel()
		<-errc
	})
	s := &tlsStateServer{addr: listeners[0].ln.Addr().String(), certs: certs}
	_, port, _ := net.SplitHostPort(s.addr)
	s.hostIssuer = "https://" + issuerHost + ":" + port + "/fd"
	s.ipIssuer = "https://127.0.0.1:" + port + "/ip"
	var issuers []*issuer.Issuer
	for name, url := range map[string]string{"fd": s.hostIssuer, "ip": s.ipIssuer} {
		issuers = append(issuers, testIssuer(t, name, url))
	}
	if err := mux.Set(issuers); err != nil {
		t.Fatal(err)
	}
	return s
}

func testIssuer(t *testing.T, name, url string) *issuer.Issuer {
	t.Helper()
	data, err := signingkeys.NewJWKS()
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := signingkeys.ParseJWKS(data)
	if err != nil {
		t.Fatal(err)
	}
	key := func() []byte {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		return b
	}
	return &issuer.Issuer{URL: url, Namespace: "supervisor", Name: name, UID: types.UID("uid-" + name), JWKS: jwks,
		TokenSigningKey: key(), StateSigningKey: key(), StateEncryptionKey: key(), CSRFKey: key()}
}

// served is one response and the certificate it came over.
type served struct {
	status             int
	body, contentType  string
	certificate, proto string
}

// do sends a request on a new connection, as the URL's host would reach the listener (with
// that name in SNI unless it is an address), over HTTP/2 or HTTP/1.1.
func (s *tlsStateServer) do(t *testing.T, method, url string, h2 bool) served {
	t.Helper()
	transport := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, s.addr)
		},
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the certificate served is what is checked
		ForceAttemptHTTP2: h2,
		DisableKeepAlives: true,
	}
	if !h2 {
		transport.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return served{status: resp.StatusCode, body: string(body), contentType: resp.Header.Get("Content-Type"),
		certificate: resp.TLS.PeerCertificates[0].Subject.CommonName, proto: resp.Proto}
}

func servingCert(t *testing.T, name string) *tls.Certificate {
	t.Helper()
	ca, err := certauthority.New(name+" CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssueServingCert(name, []string{name}, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &cert
}

// The endpoints answer as Pinniped's Supervisor's do in every TLS state: on a connection that got
// the bootstrap certificate (no certificate for the name asked for, and no default one) only
// /healthz works and everything else is a 500 naming the problem; once a certificate is served,
// the issuers' endpoints answer, with 404 for unknown hosts and paths and 405 for wrong methods.
func TestEndpointsInEachTLSState(t *testing.T) {
	s := newTLSStateServer(t)
	const (
		sniName     = issuerHost
		defaultName = "default.example.com"
		invalid     = "pinniped supervisor has invalid TLS serving certificate configuration\n"
		notFound    = "404 page not found\n"
		textPlain   = "text/plain; charset=utf-8"
	)
	sniCert, defaultCert := servingCert(t, sniName), servingCert(t, defaultName)

	// answer is what one request must get: body is exact unless prefix is set.
	type answer struct {
		status      int
		body        string
		prefix      bool
		contentType string
	}
	ok := func(prefix string) answer {
		return answer{http.StatusOK, prefix, true, "application/json"}
	}
	text := func(status int, body string) answer { return answer{status, body, false, textPlain} }
	// endpoints are the requests every state is tried with, at issuerURL (the configured issuer
	// whose document it serves, or the same in another case), and what each gets once a
	// certificate is served.
	endpoints := func(issuerURL, configured string) []struct {
		method, path string
		want         answer
	} {
		host := issuerURL[:strings.Index(issuerURL[len("https://"):], "/")+len("https://")]
		return []struct {
			method, path string
			want         answer
		}{
			{http.MethodGet, issuerURL + "/.well-known/openid-configuration", ok(`{"issuer":"` + configured + `",`)},
			{http.MethodGet, issuerURL + "/jwks.json", ok(`{"keys":[{`)},
			{http.MethodGet, issuerURL + "/v1alpha1/pinniped_identity_providers", ok(`{"pinniped_identity_providers":[]`)},
			{http.MethodPost, issuerURL + "/.well-known/openid-configuration", text(http.StatusMethodNotAllowed, "Method not allowed (try GET)\n")},
			{http.MethodHead, issuerURL + "/.well-known/openid-configuration", answer{http.StatusMethodNotAllowed, "", false, textPlain}},
			{http.MethodPut, issuerURL + "/jwks.json", text(http.StatusMethodNotAllowed, "Method not allowed (try GET)\n")},
			{http.MethodDelete, issuerURL + "/v1alpha1/pinniped_identity_providers", text(http.StatusMethodNotAllowed, "Method not allowed (try GET)\n")},
			{http.MethodPut, issuerURL + "/oauth2/authorize", text(http.StatusMethodNotAllowed, "Method Not Allowed: PUT (try GET or POST)\n")},
			{http.MethodPost, issuerURL + "/callback", text(http.StatusMethodNotAllowed, "Method Not Allowed: POST (try GET)\n")},
			{http.MethodPost, issuerURL + "/choose_identity_provider", text(http.StatusMethodNotAllowed, "Method Not Allowed: POST (try GET)\n")},
			{http.MethodPatch, issuerURL + "/login", text(http.StatusMethodNotAllowed, "Method Not Allowed: PATCH (try GET or POST)\n")},
			{http.MethodGet, issuerURL + "/oauth2/token", answer{http.StatusBadRequest,
				`{"error":"invalid_request","error_description":"The request is missing a required parameter, includes an invalid parameter value, includes a parameter more than once, or is otherwise malformed. HTTP method is 'GET', expected 'POST'."}`,
				false, "application/json;charset=UTF-8"}},
			{http.MethodGet, issuerURL + "/nothing", text(http.StatusNotFound, notFound)},
			{http.MethodGet, issuerURL, text(http.StatusNotFound, notFound)},
			{http.MethodGet, host + "/", text(http.StatusNotFound, notFound)},
			{http.MethodGet, host + "/healthz/more", text(http.StatusNotFound, notFound)},
			{http.MethodGet, host + "/healthz", text(http.StatusOK, "ok")},
			{http.MethodPost, host + "/healthz", text(http.StatusOK, "ok")},
		}
	}
	hostPort := s.hostIssuer[len("https://"+issuerHost):strings.LastIndex(s.hostIssuer, "/")]
	unknownHost := "https://unknown.example.com" + hostPort + "/fd"
	upperHost := "https://ISSUER.Example.com" + hostPort + "/fd"

	tests := []struct {
		name      string
		byHost    map[string]*tls.Certificate
		def       *tls.Certificate
		issuerURL string
		// configured is the issuer's URL as configured, when issuerURL writes it differently.
		configured  string
		certificate string
		// served says whether the certificate is a configured one: else only /healthz answers.
		served bool
		// unknownIssuer is true for a host no issuer has: every endpoint is then 404.
		unknownIssuer bool
	}{
		{name: "bootstrap only", issuerURL: s.hostIssuer, certificate: sni.BootstrapCommonName},
		{name: "bootstrap only, IP issuer", issuerURL: s.ipIssuer, certificate: sni.BootstrapCommonName},
		{name: "default certificate", def: defaultCert, issuerURL: s.hostIssuer, certificate: defaultName, served: true},
		{name: "SNI certificate", byHost: map[string]*tls.Certificate{issuerHost: sniCert}, issuerURL: s.hostIssuer, certificate: sniName, served: true},
		{name: "SNI certificate, upper-case name", byHost: map[string]*tls.Certificate{issuerHost: sniCert}, issuerURL: upperHost, configured: s.hostIssuer, certificate: sniName, served: true},
		{name: "SNI certificate before the default", byHost: map[string]*tls.Certificate{issuerHost: sniCert}, def: defaultCert, issuerURL: s.hostIssuer, certificate: sniName, served: true},
		{name: "IP issuer, default certificate", byHost: map[string]*tls.Certificate{issuerHost: sniCert}, def: defaultCert, issuerURL: s.ipIssuer, certificate: defaultName, served: true},
		{name: "IP issuer, only an SNI certificate", byHost: map[string]*tls.Certificate{issuerHost: sniCert}, issuerURL: s.ipIssuer, certificate: sni.BootstrapCommonName},
		{name: "host without a certificate", byHost: map[string]*tls.Certificate{issuerHost: sniCert}, issuerURL: unknownHost, certificate: sni.BootstrapCommonName},
		{name: "host without an issuer, default certificate", def: defaultCert, issuerURL: unknownHost, certificate: defaultName, served: true, unknownIssuer: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.certs.Set(tt.byHost, tt.def)
			configured := tt.configured
			if configured == "" {
				configured = tt.issuerURL
			}
			for _, e := range endpoints(tt.issuerURL, configured) {
				want := e.want
				switch {
				case !tt.served && !strings.HasSuffix(e.path, "/healthz"):
					want = text(http.StatusInternalServerError, invalid)
				case tt.unknownIssuer && !strings.HasSuffix(e.path, "/healthz"):
					want = text(http.StatusNotFound, notFound)
				}
				if e.method == http.MethodHead {
					want.body = ""
				}
				for _, h2 := range []bool{false, true} {
					got := s.do(t, e.method, e.path, h2)
					what := fmt.Sprintf("%s %s over %s", e.method, e.path, got.proto)
					if got.certificate != tt.certificate {
						t.Errorf("%s: certificate %q, want %q", what, got.certificate, tt.certificate)
					}
					bodyOK := got.body == want.body || want.prefix && strings.HasPrefix(got.body, want.body)
					if got.status != want.status || !bodyOK || got.contentType != want.contentType {
						t.Errorf("%s: %d %q (%s), want %d %q (%s)", what, got.status, got.body, got.contentType, want.status, want.body, want.contentType)
					}
				}
			}
		})
	}
}

// A connection that got the bootstrap certificate keeps answering 500 after a certificate is
// configured, as Pinniped's does: its client accepted a certificate nobody configured. A new
// connection gets the configured certificate and the endpoints.
func TestBootstrapConnectionStaysRefused(t *testing.T) {
	s := newTLSStateServer(t)
	transport := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, s.addr)
		},
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the certificate served is what is checked
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	discoveryURL := s.hostIssuer + "/.well-known/openid-configuration"
	get := func() (int, string) {
		t.Helper()
		resp, err := client.Get(discoveryURL)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.TLS.PeerCertificates[0].Subject.CommonName
	}
	if code, cn := get(); code != http.StatusInternalServerError || cn != sni.BootstrapCommonName {
		t.Fatalf("before any certificate: %d over %q", code, cn)
	}
	s.certs.Set(nil, servingCert(t, "default.example.com"))
	if code, cn := get(); code != http.StatusInternalServerError || cn != sni.BootstrapCommonName {
		t.Errorf("the same connection after a default certificate: %d over %q, want 500 over the bootstrap certificate", code, cn)
	}
	transport.CloseIdleConnections()
	if code, cn := get(); code != http.StatusOK || cn != "default.example.com" {
		t.Errorf("a new connection: %d over %q, want 200 over the default certificate", code, cn)
	}
}
