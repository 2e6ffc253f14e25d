package ingress

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// tlsEchoServer completes TLS handshakes with a certificate for its names, greets every
// connection with its own name on a line, then echoes what it reads. A client that verifies the
// certificate reaching it through the controller proves the controller replayed the ClientHello
// intact: any changed byte breaks the handshake transcript.
type tlsEchoServer struct {
	name string
	addr string // host:port it listens on
	cert *x509.Certificate
}

// roots trusts the certificates of servers.
func roots(servers ...*tlsEchoServer) *x509.CertPool {
	pool := x509.NewCertPool()
	for _, s := range servers {
		pool.AddCert(s.cert)
	}
	return pool
}

func startTLSEchoServer(t *testing.T, host, name string, dnsNames ...string) *tlsEchoServer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		DNSNames:              dnsNames,
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", net.JoinHostPort(host, "0"), &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
	})
	if err != nil {
		t.Fatalf("starting TLS echo server: %v", err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				if _, err := io.WriteString(conn, name+"\n"); err != nil {
					return
				}
				_, _ = io.Copy(conn, conn)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return &tlsEchoServer{name: name, addr: l.Addr().String(), cert: cert}
}

// echoClient is one verified TLS connection to an echo server through the controller.
type echoClient struct {
	conn   *tls.Conn
	reader *bufio.Reader
	server string // the greeting: which echo server answered
}

// dialEcho connects to addr asking for serverName (none when empty), checks the certificate
// against roots and reads the greeting.
func dialEcho(addr, serverName string, roots *x509.CertPool) (*echoClient, error) {
	cfg := &tls.Config{ServerName: serverName, RootCAs: roots}
	if serverName == "" {
		// Without a name there is nothing to verify; the controller must close the connection
		// before any certificate arrives.
		cfg.InsecureSkipVerify = true
	}
	raw, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	_ = raw.SetDeadline(time.Now().Add(5 * time.Second))
	conn := tls.Client(raw, cfg)
	c := &echoClient{conn: conn, reader: bufio.NewReader(conn)}
	greeting, err := c.reader.ReadString('\n')
	if err != nil {
		conn.Close()
		return nil, errors.Join(errors.New("handshake and greeting"), err)
	}
	c.server = strings.TrimSuffix(greeting, "\n")
	return c, nil
}

// roundTrip sends a line and checks it comes back.
func (c *echoClient) roundTrip(line string) error {
	_ = c.conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c.conn, line+"\n"); err != nil {
		return err
	}
	got, err := c.reader.ReadString('\n')
	if err != nil {
		return err
	}
	if got != line+"\n" {
		return errors.New("echo came back as " + got)
	}
	return nil
}

// freePort is a port no socket of this machine uses on any address right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// eventually retries check for up to 30s.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err = check(); err == nil {
			return
		}
	}
	t.Fatalf("%s: %v", what, err)
}
