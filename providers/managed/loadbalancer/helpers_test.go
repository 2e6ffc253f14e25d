package loadbalancer

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// echoServer greets every connection with its name on a line, then echoes what it reads.
type echoServer struct {
	name string
	addr string // host:port it listens on
}

func startEchoServer(t *testing.T, host, name string) *echoServer {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("starting echo server: %v", err)
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
	return &echoServer{name: name, addr: l.Addr().String()}
}

// echoClient is one connection to an echo server, possibly through a forwarder.
type echoClient struct {
	conn   net.Conn
	reader *bufio.Reader
	server string // the greeting: which echo server answered
}

// dialEcho connects and reads the greeting.
func dialEcho(addr string) (*echoClient, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	c := &echoClient{conn: conn, reader: bufio.NewReader(conn)}
	greeting, err := c.reader.ReadString('\n')
	if err != nil {
		conn.Close()
		return nil, errors.Join(errors.New("reading the greeting"), err)
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
func freePort(t *testing.T) int32 {
	t.Helper()
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return int32(l.Addr().(*net.TCPAddr).Port)
}
