package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
		Names:          Names{DefaultTLSCertificateSecret: "pinniped-supervisor-default-tls-certificate"},
		Log:            Log{Level: "info"},
		Endpoints: Endpoints{
			HTTPS: &Endpoint{Network: NetworkTCP, Address: ":8443"},
			HTTP:  &Endpoint{Network: NetworkDisabled},
		},
	}
	if diff := cmp.Diff(want, c); diff != "" || *c.APIGroupSuffix != "pinniped.dev" {
		t.Errorf("defaults (-want +got):\n%s\nsuffix %q", diff, *c.APIGroupSuffix)
	}
}

func TestParseEverything(t *testing.T) {
	c, err := Parse([]byte(minimal + `apiGroupSuffix: tuna.io
labels: {app: supervisor}
log: {level: debug}
endpoints:
  https: {network: unix, address: /pinniped_socket/socketfile.sock}
  http: {network: tcp, address: "127.0.0.1:8080"}
`))
	if err != nil {
		t.Fatal(err)
	}
	if *c.APIGroupSuffix != "tuna.io" || c.Labels["app"] != "supervisor" || c.Log.Level != "debug" ||
		c.Endpoints.HTTPS.Network != NetworkUnix || !c.Endpoints.HTTP.Enabled() || c.Endpoints.HTTP.Address != "127.0.0.1:8080" {
		t.Errorf("unexpected: %+v %+v %+v", c, c.Endpoints.HTTPS, c.Endpoints.HTTP)
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
