package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sealion.dev/servers/internal/serverboot"
	"sealion.dev/servers/internal/tlsprofile"
)

const minimal = `
names:
  defaultTLSCertificateSecret: pinniped-supervisor-default-tls-certificate
`

func TestParseDefaults(t *testing.T) {
	c, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		APIGroupSuffix: c.APIGroupSuffix,
		Names:          Names{DefaultTLSCertificateSecret: "pinniped-supervisor-default-tls-certificate", APIService: "pinniped-supervisor-api"},
		Log:            serverboot.Log{Level: "info"},
		Endpoints: Endpoints{
			HTTPS: &Endpoint{Network: NetworkTCP, Address: ":8443"},
			HTTP:  &Endpoint{Network: NetworkDisabled},
		},
		AggregatedAPIServerPort: c.AggregatedAPIServerPort,
		Upstreams:               Upstreams{ConnectTimeoutSeconds: c.Upstreams.ConnectTimeoutSeconds},
	}
	if diff := cmp.Diff(want, c, cmp.AllowUnexported(tlsprofile.Profile{})); diff != "" || *c.APIGroupSuffix != "pinniped.dev" || *c.AggregatedAPIServerPort != 10250 {
		t.Errorf("defaults (-want +got):\n%s\nsuffix %q, port %d", diff, *c.APIGroupSuffix, *c.AggregatedAPIServerPort)
	}
	if got := c.Upstreams.ConnectTimeout(); got != 10*time.Second {
		t.Errorf("upstreams.connectTimeoutSeconds defaults to %v, want 10s", got)
	}
	if got := c.Names.ServingCertificateSecret(); got != "pinniped-supervisor-api-tls-serving-certificate" {
		t.Errorf("serving certificate Secret %q", got)
	}
}

func TestParseEverything(t *testing.T) {
	c, err := Parse([]byte(minimal + `apiGroupSuffix: tuna.io
labels: {app: supervisor}
log: {level: debug, format: json}
tls: {onedottwo: {allowedCiphers: [TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305]}}
endpoints:
  https: {network: unix, address: /pinniped_socket/socketfile.sock}
  http: {network: tcp, address: "127.0.0.1:8080"}
aggregatedAPIServerPort: 10443
aggregatedAPIServerDisableAdmissionPlugins: [NamespaceLifecycle]
oidc: {ignoreUserInfoEndpoint: {whenIssuerExactlyMatches: ["https://issuer.example.com"]}}
upstreams: {connectTimeoutSeconds: 3}
tracing: {endpoint: "otel-collector.monitoring.svc:4317", samplingRatePerMillion: 100}
`))
	if err != nil {
		t.Fatal(err)
	}
	if *c.AggregatedAPIServerPort != 10443 || !slices.Equal(c.AggregatedAPIServerDisableAdmissionPlugins, []string{"NamespaceLifecycle"}) {
		t.Errorf("aggregated API settings: %d %v", *c.AggregatedAPIServerPort, c.AggregatedAPIServerDisableAdmissionPlugins)
	}
	if *c.APIGroupSuffix != "tuna.io" || c.Labels["app"] != "supervisor" || c.Log.Level != "debug" ||
		c.Endpoints.HTTPS.Network != NetworkUnix || !c.Endpoints.HTTP.Enabled() || c.Endpoints.HTTP.Address != "127.0.0.1:8080" {
		t.Errorf("unexpected: %+v %+v %+v", c, c.Endpoints.HTTPS, c.Endpoints.HTTP)
	}
	if got := c.OIDC.IgnoreUserInfoEndpoint.WhenIssuerExactlyMatches; !slices.Equal(got, []string{"https://issuer.example.com"}) {
		t.Errorf("oidc.ignoreUserInfoEndpoint.whenIssuerExactlyMatches %v", got)
	}
	if got := c.Upstreams.ConnectTimeout(); got != 3*time.Second {
		t.Errorf("upstreams.connectTimeoutSeconds: %v, want 3s", got)
	}
	if tr := c.Tracing; tr == nil || *tr.Endpoint != "otel-collector.monitoring.svc:4317" || *tr.SamplingRatePerMillion != 100 {
		t.Errorf("tracing %+v", tr)
	}
	if got := c.TLSProfile.CipherNames(); !slices.Equal(got, []string{"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"}) {
		t.Errorf("TLS 1.2 ciphers %v", got)
	}
	c, err = Parse([]byte("names: {defaultTLSCertificateSecret: tls, apiService: tuna-supervisor-api}\n"))
	if err != nil || c.Names.ServingCertificateSecret() != "tuna-supervisor-api-tls-serving-certificate" {
		t.Errorf("names.apiService: %v, %+v", err, c)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{name: "unknown field", doc: minimal + "port: 1\n", want: []string{`unknown field "port"`}},
		{name: "missing default TLS Secret", doc: "log: {level: info}\n", want: []string{"names.defaultTLSCertificateSecret: required"}},
		{name: "every error at once", doc: `apiGroupSuffix: tuna
names: {defaultTLSCertificateSecret: Not_A_Name}
log: {level: loud}
endpoints:
  https: {network: udp, address: ":1"}
  http: {network: tcp, address: "0.0.0.0:8080"}
`, want: []string{"apiGroupSuffix", "defaultTLSCertificateSecret", "log.level", "endpoints.https.network", "endpoints.http.address: \"0.0.0.0:8080\" must be on a loopback address"}},
		{name: "both disabled", doc: minimal + "endpoints: {https: {network: disabled}, http: {network: disabled}}\n", want: []string{"cannot both be disabled"}},
		{name: "same address", doc: minimal + "endpoints: {https: {network: tcp, address: \"127.0.0.1:1\"}, http: {network: tcp, address: \"127.0.0.1:1\"}}\n", want: []string{"both listen on"}},
		{name: "unix without a path", doc: minimal + "endpoints: {https: {network: unix}}\n", want: []string{"endpoints.https.address: required"}},
		{name: "reserved-name exceptions that are not reserved names or are patterns", doc: minimal + "allowedReservedNames: {usernames: [admin], groups: [\"system:*\"]}\n",
			want: []string{`allowedReservedNames: usernames: "admin"`, `groups: "system:*"`}},
		{name: "aggregated API port out of range", doc: minimal + "aggregatedAPIServerPort: 443\n", want: []string{"aggregatedAPIServerPort: must be within 1024-65535, got 443"}},
		{name: "aggregated API port of the HTTPS listener", doc: minimal + "aggregatedAPIServerPort: 8443\n", want: []string{"aggregatedAPIServerPort: 8443 is also the port of endpoints.https"}},
		{name: "invalid API Service name", doc: minimal[:len(minimal)-1] + "\n  apiService: Not.A.Service\n", want: []string{`names.apiService: "Not.A.Service" is not a valid Service name`}},
		{name: "log format text and unknown ciphers", doc: minimal + "log: {format: text}\ntls: {onedottwo: {allowedCiphers: [TLS_RSA_WITH_AES_128_CBC_SHA]}}\n", want: []string{
			"log.format: invalid log format, valid choices are the empty string or 'json'",
			"tls.onedottwo.allowedCiphers: unrecognized ciphers [TLS_RSA_WITH_AES_128_CBC_SHA], ciphers must be from list [",
		}},
		{name: "disabled with an address", doc: minimal + "endpoints: {http: {network: disabled, address: \"127.0.0.1:8080\"}}\n", want: []string{
			`endpoints.http.address: set to "127.0.0.1:8080" while disabled, should be empty`,
		}},
		{name: "ignored issuers not a list", doc: minimal + "oidc: {ignoreUserInfoEndpoint: {whenIssuerExactlyMatches: https://a}}\n", want: []string{"whenIssuerExactlyMatches"}},
		{name: "upstream connect timeout of zero", doc: minimal + "upstreams: {connectTimeoutSeconds: 0}\n", want: []string{"upstreams.connectTimeoutSeconds: must be within 1-300, got 0"}},
		{name: "upstream connect timeout too long", doc: minimal + "upstreams: {connectTimeoutSeconds: 301}\n", want: []string{"upstreams.connectTimeoutSeconds: must be within 1-300, got 301"}},
		{name: "tracing to an HTTP URL, sampling more than all", doc: minimal + "tracing: {endpoint: \"http://collector:4318\", samplingRatePerMillion: 1000001}\n", want: []string{
			"tracing.samplingRatePerMillion: Invalid value: 1000001", "tracing.endpoint: Invalid value: \"http://collector:4318\": unsupported scheme: http",
		}},
		{name: "tcp without a port", doc: minimal + "endpoints: {https: {network: tcp, address: localhost}}\n", want: []string{"is not host:port"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pinniped.yaml")
	if err := os.WriteFile(path, []byte(minimal), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "reading config") {
		t.Errorf("missing file: %v", err)
	}
}

// Pinniped's audit keys are accepted with their values, and any other value is refused by name.
func TestParseAudit(t *testing.T) {
	c, err := Parse([]byte(minimal + "audit: {logUsernamesAndGroups: enabled, logInternalPaths: disabled}\n"))
	if err != nil || !c.Audit.LogUsernamesAndGroups.Enabled() || c.Audit.LogInternalPaths.Enabled() {
		t.Fatalf("got %+v, %v", c, err)
	}
	_, err = Parse([]byte(minimal + "audit: {logUsernamesAndGroups: on, logInternalPaths: Enabled}\n"))
	for _, w := range []string{`audit.logUsernamesAndGroups: must be "enabled", "disabled" or empty`, `audit.logInternalPaths: must be`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not mention %q", err, w)
		}
	}
}
