package impersonator

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// streamHijacker hands the upgrade-aware handler the client's connection as a streamConn.
type streamHijacker struct{ http.ResponseWriter }

func (h streamHijacker) Unwrap() http.ResponseWriter { return h.ResponseWriter }

func (h streamHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := h.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the connection cannot be taken over")
	}
	c, rw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	return streamConn{c}, rw, nil
}

// streamConn is a stream's client connection: what the upgrade-aware handler copies to it goes
// through coalesce, and its Close lingers.
type streamConn struct{ net.Conn }

func (c streamConn) ReadFrom(r io.Reader) (int64, error) { return coalesce(c.Conn, r) }

// lingerTimeout bounds how long a closed stream's connection waits for the client to close its
// side: nginx's lingering_time. The client has the stream's last bytes by then unless it reads
// more slowly than the kernel's send buffer (a few MB) takes that long to drain.
const lingerTimeout = 30 * time.Second

// Close ends the stream without losing what is still on its way to the client. The upgrade-aware
// handler closes the client's connection as soon as the kube-apiserver's last bytes are written
// to it, while a slow client may still have megabytes of them to read in the proxy's send
// buffer. A socket closed outright answers any byte that arrives afterwards with a reset, and a
// reset throws that buffer away: client-go's WebSocket heartbeat, every 5 s, is such a byte, and
// an exec's output then ends early, with an error or none. So Close half-closes (TLS's
// close_notify, then a FIN after the queued bytes) and reads, discarding, until the client
// closes its side or lingerTimeout passes, as web servers do (a lingering close).
func (c streamConn) Close() error {
	if err := closeWrite(c.Conn); err != nil {
		return c.Conn.Close()
	}
	go func() {
		defer c.Conn.Close()
		if c.Conn.SetReadDeadline(time.Now().Add(lingerTimeout)) == nil {
			_, _ = io.Copy(io.Discard, c.Conn)
		}
	}()
	return nil
}

// closeWrite ends what conn sends, after the bytes it holds: TLS's close_notify, then TCP's FIN.
func closeWrite(conn net.Conn) error {
	if tc, ok := conn.(*tls.Conn); ok {
		if err := tc.CloseWrite(); err != nil {
			return err
		}
		conn = tc.NetConn()
	}
	hc, ok := conn.(interface{ CloseWrite() error })
	if !ok {
		return errors.New("the connection cannot be half-closed")
	}
	return hc.CloseWrite()
}

// relayBufferSize bounds what one write to the client carries: two TLS records of the most
// plaintext one holds (16 KiB). The kube-apiserver writes exec's output in TLS records of 7 KiB
// on average (its WebSocket frames pass through a 4 KiB buffer); relayed one for one, each cost
// the proxy a write of its own and the client a wakeup and a read.
const relayBufferSize = 32 << 10

// relayBuffers are coalesce's buffers, taken while bytes flow and given back when they stop: an
// idle stream (a shell waiting for its user) holds only its read buffer.
var relayBuffers = sync.Pool{New: func() any { b := make([]byte, relayBufferSize); return &b }}

// coalesce copies src to dst until src ends, as io.Copy does, but keeps reading while a write is
// under way and then writes all that arrived meanwhile at once, up to relayBufferSize: when the
// client or the CPU is slower than the kube-apiserver, many small reads make few large writes.
// Nothing waits for more bytes: whatever was read is written as soon as the last write is done,
// so an interactive stream sees no added delay. A failed write ends the copy; the reader stops at
// its next read, which the upgrade-aware handler's closing of both connections then ends.
func coalesce(dst io.Writer, src io.Reader) (written int64, err error) {
	var (
		mu      sync.Mutex
		changed = sync.NewCond(&mu)
		pending *[]byte // read, not yet taken by the writer; nil when empty
		readErr error   // why the reader stopped; pending still holds its last bytes
		stopped bool    // the writer failed: the reader keeps nothing more
	)
	go func() {
		buf := make([]byte, 16<<10) // the plaintext of one TLS record, what a Read of one returns
		for {
			n, err := src.Read(buf)
			mu.Lock()
			if n > 0 {
				for pending != nil && len(*pending)+n > relayBufferSize && !stopped {
					changed.Wait() // the writer takes pending whole; then there is room
				}
				if stopped {
					mu.Unlock()
					return
				}
				if pending == nil {
					pending = relayBuffers.Get().(*[]byte)
					*pending = (*pending)[:0]
				}
				*pending = append(*pending, buf[:n]...)
			}
			if err != nil {
				readErr = err
			}
			changed.Broadcast()
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	for {
		mu.Lock()
		for pending == nil && readErr == nil {
			changed.Wait()
		}
		out, rerr := pending, readErr
		pending = nil
		changed.Broadcast()
		mu.Unlock()
		if out != nil {
			n, err := dst.Write(*out)
			written += int64(n)
			relayBuffers.Put(out)
			if err != nil {
				mu.Lock()
				stopped = true
				if pending != nil {
					relayBuffers.Put(pending)
					pending = nil
				}
				changed.Broadcast()
				mu.Unlock()
				return written, err
			}
		}
		if out == nil && rerr != nil {
			if rerr == io.EOF {
				return written, nil
			}
			return written, rerr
		}
	}
}
