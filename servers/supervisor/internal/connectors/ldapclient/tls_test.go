package ldapclient

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"sealion.dev/servers/internal/tlsprofile"
)

// TestOffersProfileCiphers: the TLS 1.2 ciphers offered to an LDAPS server are those of the
// configured profile, which tls.onedottwo.allowedCiphers narrows.
func TestOffersProfileCiphers(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lis.Close() })
	hellos := make(chan []uint16, 1)
	go func() {
		conn, err := lis.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		// The ClientHello is all this server wants: it refuses the handshake after reading it.
		_ = tls.Server(conn, &tls.Config{GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			hellos <- hello.CipherSuites
			return nil, errors.New("seen")
		}}).Handshake()
	}()

	profile, err := tlsprofile.New([]string{"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := validConfig()
	cfg.Host, cfg.TLSProfile = lis.Addr().String(), profile
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() { _, _ = p.Probe(ctx) }()

	select {
	case offered := <-hellos:
		var tls12 []uint16 // TLS 1.3's ciphers are Go's, always offered
		for _, s := range tls.CipherSuites() {
			if slices.Contains(offered, s.ID) && slices.Contains(s.SupportedVersions, tls.VersionTLS12) {
				tls12 = append(tls12, s.ID)
			}
		}
		for _, s := range tls.InsecureCipherSuites() {
			if slices.Contains(offered, s.ID) {
				tls12 = append(tls12, s.ID)
			}
		}
		want := []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA}
		slices.Sort(tls12)
		slices.Sort(want)
		if !slices.Equal(tls12, want) {
			t.Errorf("TLS 1.2 ciphers offered = %x, want %x", tls12, want)
		}
	case <-ctx.Done():
		t.Fatal("no ClientHello reached the server")
	}
}
