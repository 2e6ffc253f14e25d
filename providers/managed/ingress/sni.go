package ingress

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
)

// errHelloRead stops the TLS handshake once the ClientHello has been read.
var errHelloRead = errors.New("ClientHello read")

// errReadOnly refuses the writes of the stopped handshake (its alert): the client must see only
// what the backend sends.
var errReadOnly = errors.New("the connection is only being read")

// readServerName reads the TLS ClientHello at the start of conn and returns the server name (SNI)
// it asks for, empty when it names none, together with every byte read from conn, which the
// backend must be sent first. crypto/tls parses the ClientHello: a server handshake over a conn
// that records what is read, stopped as soon as the hello is known.
func readServerName(conn net.Conn) (serverName string, read []byte, err error) {
	rec := &recordingConn{Conn: conn}
	sawHello := false
	handshakeErr := tls.Server(rec, &tls.Config{
		GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			serverName, sawHello = hello.ServerName, true
			return nil, errHelloRead
		},
	}).Handshake()
	if !sawHello {
		return "", nil, fmt.Errorf("reading a TLS ClientHello: %w", handshakeErr)
	}
	return serverName, rec.read.Bytes(), nil
}

// recordingConn keeps a copy of everything read from the connection and refuses writes.
type recordingConn struct {
	net.Conn
	read bytes.Buffer
}

func (r *recordingConn) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.read.Write(p[:n])
	return n, err
}

func (r *recordingConn) Write([]byte) (int, error) { return 0, errReadOnly }
