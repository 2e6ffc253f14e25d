// Package rawhttp sends HTTP requests exactly as a test writes them: header names in any case,
// repeated, and the connection-specific headers that net/http's clients rewrite (Connection) or
// refuse to send over HTTP/2. Tests of a trust boundary use it to send what an attacker writes by
// hand.
package rawhttp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Request is a request to send: the request target (path and query), its header lines in order
// as {name, value}, sent as written (Host and, with a body, Content-Length are added), and its body.
type Request struct {
	Method, Target string
	Headers        [][2]string
	Body           []byte
}

// Response is the server's answer. For HTTP/2, a server that refused the stream instead of
// answering it leaves Status 0 and says how in Reset (an RST_STREAM or GOAWAY error code).
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	Reset  string
}

// timeout bounds a request whose context has no deadline.
const timeout = 30 * time.Second

// HTTP1 sends req over a new HTTP/1.1 connection to addr (TLS when tlsConfig is not nil) and
// reads the response. An answer of 101 Switching Protocols is returned without reading further.
func HTTP1(ctx context.Context, addr string, tlsConfig *tls.Config, req Request) (*Response, error) {
	if tlsConfig != nil {
		tlsConfig = tlsConfig.Clone()
		tlsConfig.NextProtos = []string{"http/1.1"}
	}
	conn, err := dial(ctx, addr, tlsConfig)
	if err != nil {
		return nil, err
	}
	defer conn.Close()

	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", req.Method, req.Target, addr)
	for _, h := range req.Headers {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	if len(req.Body) > 0 {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(req.Body))
	}
	b.WriteString("\r\n")
	b.Write(req.Body)
	if _, err := conn.Write(b.Bytes()); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := &Response{Status: resp.StatusCode, Header: resp.Header}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		if out.Body, err = io.ReadAll(resp.Body); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// HTTP2 sends req as the only stream of a new HTTP/2 connection over TLS to addr, with its
// header lines as HPACK fields as written (lower-cased only by the test, if it wishes), and
// reads the answer.
func HTTP2(ctx context.Context, addr string, tlsConfig *tls.Config, req Request) (*Response, error) {
	tlsConfig = tlsConfig.Clone()
	tlsConfig.NextProtos = []string{http2.NextProtoTLS}
	conn, err := dial(ctx, addr, tlsConfig)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if p := conn.(*tls.Conn).ConnectionState().NegotiatedProtocol; p != http2.NextProtoTLS {
		return nil, fmt.Errorf("the server at %s did not negotiate HTTP/2 (ALPN %q)", addr, p)
	}
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		return nil, err
	}
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := fr.WriteSettings(); err != nil {
		return nil, err
	}

	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	fields := [][2]string{{":method", req.Method}, {":scheme", "https"}, {":authority", addr}, {":path", req.Target}}
	if len(req.Body) > 0 {
		fields = append(fields, [2]string{"content-length", strconv.Itoa(len(req.Body))})
	}
	for _, f := range append(fields, req.Headers...) {
		if err := enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
			return nil, err
		}
	}
	const stream = 1
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: block.Bytes(), EndHeaders: true, EndStream: len(req.Body) == 0}); err != nil {
		return nil, err
	}
	if len(req.Body) > 0 {
		if err := fr.WriteData(stream, true, req.Body); err != nil {
			return nil, err
		}
	}

	out := &Response{Header: http.Header{}}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return nil, fmt.Errorf("reading the answer to %s %s: %w", req.Method, req.Target, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if err := fr.WriteSettingsAck(); err != nil {
					return nil, err
				}
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				if err := fr.WritePing(true, f.Data); err != nil {
					return nil, err
				}
			}
		case *http2.RSTStreamFrame:
			out.Reset = f.ErrCode.String()
			return out, nil
		case *http2.GoAwayFrame:
			out.Reset = f.ErrCode.String()
			return out, nil
		case *http2.MetaHeadersFrame:
			for _, hf := range f.Fields {
				if hf.Name == ":status" {
					out.Status, _ = strconv.Atoi(hf.Value)
				} else {
					out.Header.Add(hf.Name, hf.Value)
				}
			}
			if f.StreamEnded() {
				return out, nil
			}
		case *http2.DataFrame:
			out.Body = append(out.Body, f.Data()...)
			if len(f.Data()) > 0 {
				// Give the flow-control window back, so that a long answer is not stalled.
				if err := fr.WriteWindowUpdate(0, uint32(len(f.Data()))); err != nil {
					return nil, err
				}
				if err := fr.WriteWindowUpdate(stream, uint32(len(f.Data()))); err != nil {
					return nil, err
				}
			}
			if f.StreamEnded() {
				return out, nil
			}
		}
	}
}

// dial connects to addr within ctx's deadline (or timeout), and keeps that deadline on the
// connection.
func dial(ctx context.Context, addr string, tlsConfig *tls.Config) (net.Conn, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(timeout)
	}
	d := &net.Dialer{Deadline: deadline}
	var conn net.Conn
	var err error
	if tlsConfig != nil {
		conn, err = (&tls.Dialer{NetDialer: d, Config: tlsConfig}).DialContext(ctx, "tcp", addr)
	} else {
		conn, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	if err := conn.SetDeadline(deadline); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}
