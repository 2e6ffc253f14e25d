package impersonator

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// chunks is a reader that returns each of its chunks by one Read, waiting for next before each;
// each Read is announced on reads, when set (coalesce reads again once it has kept the last).
type chunks struct {
	next   chan []byte
	closed chan struct{}
	reads  chan struct{}
}

func (c *chunks) Read(p []byte) (int, error) {
	if c.reads != nil {
		c.reads <- struct{}{}
	}
	select {
	case b, ok := <-c.next:
		if !ok {
			return 0, io.EOF
		}
		return copy(p, b), nil
	case <-c.closed:
		return 0, errors.New("closed")
	}
}

// gatedWriter records each Write and blocks it until release says so.
type gatedWriter struct {
	writes  chan []byte
	release chan struct{}
	err     error
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	w.writes <- bytes.Clone(p)
	<-w.release
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

func TestCoalesceCopiesEveryByte(t *testing.T) {
	data := make([]byte, 5<<20+7)
	for i := range data {
		data[i] = byte(rand.Uint32())
	}
	for name, tc := range map[string]struct {
		src  io.Reader
		want []byte
	}{
		"whole":    {bytes.NewReader(data), data},
		"one byte": {iotest.OneByteReader(bytes.NewReader(data[:64<<10])), data[:64<<10]},
		"halves":   {iotest.HalfReader(bytes.NewReader(data)), data},
		"data err": {iotest.DataErrReader(bytes.NewReader(data)), data},
	} {
		t.Run(name, func(t *testing.T) {
			var dst bytes.Buffer
			n, err := coalesce(&dst, tc.src)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(len(tc.want)) || !bytes.Equal(dst.Bytes(), tc.want) {
				t.Errorf("copied %d bytes, want the %d read, unchanged", n, len(tc.want))
			}
		})
	}
}

func TestCoalesceWritesWhatArrivedDuringAWriteAtOnce(t *testing.T) {
	src := &chunks{next: make(chan []byte), closed: make(chan struct{}), reads: make(chan struct{}, 10)}
	dst := &gatedWriter{writes: make(chan []byte, 10), release: make(chan struct{})}
	done := make(chan error, 1)
	go func() { _, err := coalesce(dst, src); done <- err }()

	src.next <- []byte("a")
	if got := <-dst.writes; string(got) != "a" {
		t.Fatalf("first write %q, want the first read alone", got)
	}
	// The first write is under way: three more reads arrive meanwhile.
	for _, b := range []string{"b", "c", "d"} {
		src.next <- []byte(b)
	}
	// The reads of a, b, c and d, and the next one, once d is kept.
	for range 5 {
		<-src.reads
	}
	dst.release <- struct{}{}
	if got := <-dst.writes; string(got) != "bcd" {
		t.Errorf("second write %q, want the three reads made during the first at once", got)
	}
	dst.release <- struct{}{}
	close(src.next)
	if err := <-done; err != nil {
		t.Errorf("copy ended with %v, want nil at the source's end", err)
	}
}

// An interactive stream: a prompt, then nothing until the user types. The prompt must reach the
// client without waiting for more.
func TestCoalesceDoesNotWaitForMore(t *testing.T) {
	src := &chunks{next: make(chan []byte), closed: make(chan struct{})}
	dst := &gatedWriter{writes: make(chan []byte, 10), release: make(chan struct{})}
	close(dst.release)
	go func() { _, _ = coalesce(dst, src) }()
	defer close(src.closed)
	src.next <- []byte("$ ")
	select {
	case got := <-dst.writes:
		if string(got) != "$ " {
			t.Errorf("wrote %q, want the prompt", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the prompt was not written while the source had nothing more")
	}
}

func TestCoalesceBoundsWhatItHolds(t *testing.T) {
	src := &chunks{next: make(chan []byte), closed: make(chan struct{})}
	dst := &gatedWriter{writes: make(chan []byte, 10), release: make(chan struct{})}
	done := make(chan error, 1)
	go func() { _, err := coalesce(dst, src); done <- err }()
	src.next <- []byte("x")
	<-dst.writes // under way, not released
	// The reader keeps chunks until its buffer is full, takes one more, and waits for the writer.
	chunk := bytes.Repeat([]byte("y"), 8<<10)
	sent := 0
	for sent < 2*relayBufferSize {
		select {
		case src.next <- chunk:
			sent += len(chunk)
			continue
		case <-time.After(time.Second):
		}
		break
	}
	if sent > relayBufferSize+len(chunk) {
		t.Errorf("the reader took %d bytes while a write was under way; it keeps at most %d", sent, relayBufferSize)
	}
	dst.release <- struct{}{}
	if got := <-dst.writes; len(got) > relayBufferSize {
		t.Errorf("a write of %d bytes, more than %d", len(got), relayBufferSize)
	}
	close(dst.release)
	close(src.next)
	if err := <-done; err != nil {
		t.Error(err)
	}
}

func TestCoalesceEndsOnAFailedWrite(t *testing.T) {
	src := &chunks{next: make(chan []byte), closed: make(chan struct{})}
	dst := &gatedWriter{writes: make(chan []byte, 10), release: make(chan struct{}), err: errors.New("client gone")}
	close(dst.release)
	done := make(chan error, 1)
	go func() { _, err := coalesce(dst, src); done <- err }()
	src.next <- []byte("a")
	if err := <-done; err == nil || err.Error() != "client gone" {
		t.Errorf("copy ended with %v, want the write's error", err)
	}
	// The upgrade-aware handler then closes the kube-apiserver's connection: the reader's next
	// read fails and it stops.
	close(src.closed)
}

func TestCoalesceReturnsTheSourcesError(t *testing.T) {
	want := errors.New("reset")
	var dst bytes.Buffer
	n, err := coalesce(&dst, io.MultiReader(bytes.NewReader([]byte("partial")), iotest.ErrReader(want)))
	if !errors.Is(err, want) || n != 7 || dst.String() != "partial" {
		t.Errorf("copied %d bytes (%q) and ended with %v, want the 7 read and %v", n, dst.String(), err, want)
	}
}

// An upgraded stream carries every byte both ways through the proxy, in order, however the
// client splits its writes: the fake kube-apiserver echoes what it reads.
func TestUpgradedStreamCarriesEveryByte(t *testing.T) {
	conn, r := upgradeThrough(t, testProxy(t, newFakeKube(t), false), "/api/v1/namespaces/work/pods/p/exec")
	data := make([]byte, 3<<20+5)
	for i := range data {
		data[i] = byte(rand.Uint32())
	}
	go func() {
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 1+rand.IntN(20<<10))
			if _, err := conn.Write(rest[:n]); err != nil {
				return
			}
			rest = rest[n:]
		}
	}()
	got := make([]byte, len(data))
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Error("the stream came back changed")
	}
}

// A stream's last bytes reach a client that reads them late, even when the client sends
// something after the kube-apiserver has ended the stream and the proxy has closed its side
// (client-go's WebSocket heartbeat, every 5 s, does): closed outright, the proxy's socket would
// answer with a reset, which throws away what its kernel had yet to send.
func TestStreamEndReachesALateReader(t *testing.T) {
	const size = 1 << 20
	kube := newFakeKube(t)
	conn, r := upgradeThrough(t, testProxy(t, kube, false), "/api/v1/namespaces/work/pods/p/exec?write="+strconv.Itoa(size))
	// The proxy closes the client's connection before the kube-apiserver's.
	select {
	case <-kube.ended:
	case <-time.After(20 * time.Second):
		t.Fatal("the proxy never closed the stream: were its bytes more than the sockets hold unread?")
	}
	if _, err := io.WriteString(conn, "ping"); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil || len(got) != size {
		t.Fatalf("read %d bytes of %d, then %v; want them all, then the end of the stream", len(got), size, err)
	}
}

// upgradeThrough asks front to upgrade a POST of path to SPDY as user-token's user and returns
// the connection once it is switched, and its reader (which holds what followed the response).
func upgradeThrough(t *testing.T, front *httptest.Server, path string) (*tls.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(front.URL, "https://"), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the test's own server
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err = io.WriteString(conn, "POST "+path+" HTTP/1.1\r\nHost: kube\r\nAuthorization: Bearer user-token\r\n"+
		"Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d, want 101", resp.StatusCode)
	}
	return conn, r
}
