package tlsprofile

import (
	"crypto/tls"
	"slices"
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name      string
		allowed   []string
		wantNames []string
		wantHTTP2 bool
		wantErr   string
	}{
		{
			name: "no list keeps the defaults",
			wantNames: []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
				"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
				"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"},
			wantHTTP2: true,
		},
		{
			name:      "narrowed, in the default order, LDAP-only ciphers ignored",
			allowed:   []string{"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
			wantNames: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"},
			wantHTTP2: true,
		},
		{
			name:      "without an AES-128-GCM cipher, no HTTP/2",
			allowed:   []string{"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"},
			wantNames: []string{"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"},
		},
		{
			name:      "Go's old CHACHA20 names",
			allowed:   []string{"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305"},
			wantNames: []string{"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"},
		},
		{
			name:    "unknown and insecure names",
			allowed: []string{"TLS_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "bogus"},
			wantErr: "unrecognized ciphers [TLS_RSA_WITH_AES_128_GCM_SHA256, bogus], ciphers must be from list [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, ",
		},
		{
			name:    "only LDAP ciphers leave the listeners none",
			allowed: []string{"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"},
			wantErr: "none of the allowed ciphers is one the servers offer",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.allowed)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.CipherNames(); !slices.Equal(got, tt.wantNames) {
				t.Errorf("ciphers %v, want %v", got, tt.wantNames)
			}
			if p.HTTP2() != tt.wantHTTP2 || p.Protocols().HTTP2() != tt.wantHTTP2 || !p.Protocols().HTTP1() {
				t.Errorf("HTTP/2 %v, protocols %v; want HTTP/2 %v and HTTP/1.1", p.HTTP2(), p.Protocols(), tt.wantHTTP2)
			}
			c := p.ServerConfig()
			if c.MinVersion != tls.VersionTLS12 || len(c.CipherSuites) != len(tt.wantNames) {
				t.Errorf("server config: min version %x, %d ciphers", c.MinVersion, len(c.CipherSuites))
			}
		})
	}
}

// The error lists every accepted name, so that a user can correct the list from the message.
func TestErrorListsAcceptedNames(t *testing.T) {
	_, err := New([]string{"x"})
	for _, name := range []string{"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("error %v does not list %s", err, name)
		}
	}
}

// LDAP connections offer the default ciphers and the LDAP-only CBC ones, and an allowed list
// narrows them as it narrows the listeners', CBC ciphers included, as Pinniped's LDAP profile.
func TestLDAPClientConfig(t *testing.T) {
	tests := []struct {
		name    string
		allowed []string
		want    []uint16
	}{
		{name: "defaults", want: slices.Concat(defaultCiphers, ldapCiphers)},
		{name: "narrowed", allowed: []string{"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
			want: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.allowed)
			if err != nil {
				t.Fatal(err)
			}
			cfg := p.LDAPClientConfig()
			if !slices.Equal(cfg.CipherSuites, tt.want) || cfg.MinVersion != tls.VersionTLS12 {
				t.Errorf("LDAP client config offers %v from TLS %x; want %v from TLS 1.2", names(cfg.CipherSuites), cfg.MinVersion, names(tt.want))
			}
		})
	}
}
