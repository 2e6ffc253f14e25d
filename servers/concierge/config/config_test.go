package config

import (
	"strings"
	"testing"
)

const minimal = `
names:
  servingCertificateSecret: pinniped-concierge-api-tls-serving-certificate
  credentialIssuer: pinniped-concierge-config
  apiService: pinniped-concierge-api
`

func TestParseDefaults(t *testing.T) {
	c, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if *c.APIGroupSuffix != "pinniped.dev" || *c.AggregatedAPIServerPort != 10250 || c.Log.Level != "info" || c.Signer != nil {
		t.Errorf("unexpected defaults: %+v", c)
	}
	if *c.API.ServingCertificate.DurationSeconds != 365*24*3600 {
		t.Errorf("duration default %d", *c.API.ServingCertificate.DurationSeconds)
	}
}

func TestParseErrors(t *testing.T) {
	tests := map[string]struct {
		doc  string
		want []string
	}{
		"unknown field": {doc: minimal + "bogus: 1\n", want: []string{"bogus"}},
		"bad suffix and port and level": {
			doc:  minimal + "apiGroupSuffix: nodots\naggregatedAPIServerPort: 80\nlog:\n  level: loud\n",
			want: []string{"apiGroupSuffix", "aggregatedAPIServerPort", "log.level"},
		},
		"missing names": {doc: "{}", want: []string{"names.servingCertificateSecret", "names.credentialIssuer", "names.apiService"}},
		"renew after expiry": {
			doc:  minimal + "api:\n  servingCertificate:\n    durationSeconds: 10\n    renewBeforeSeconds: 20\n",
			want: []string{"api.servingCertificate"},
		},
		"half a signer": {doc: minimal + "signer:\n  certificateFile: /a\n", want: []string{"signer"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil {
				t.Fatal("expected an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
