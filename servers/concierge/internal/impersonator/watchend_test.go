package impersonator

import (
	"bytes"
	"encoding/binary"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// watchStream is a watch response whose body the test writes in chunks of its choosing.
type watchStream struct {
	w    *io.PipeWriter
	res  *http.Response
	stop chan struct{}
}

func newWatchStream(contentType string) *watchStream {
	r, w := io.Pipe()
	s := &watchStream{w: w, stop: make(chan struct{}),
		res: &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {contentType}}, Body: r}}
	endWatchOnStop(s.res, s.stop)
	return s
}

// send writes chunk as the kube-apiserver's next bytes, in a goroutine: the pipe blocks until
// they are read.
func (s *watchStream) send(chunk []byte) { go func() { _, _ = s.w.Write(chunk) }() }

// read reads n bytes, failing on an error.
func (s *watchStream) read(t *testing.T, n int) []byte {
	t.Helper()
	buf := make([]byte, n)
	if _, err := io.ReadFull(s.res.Body, buf); err != nil {
		t.Fatalf("reading %d bytes: %v", n, err)
	}
	return buf
}

// ends reads what is left of the body, which must end cleanly, within a few seconds, with want.
func (s *watchStream) ends(t *testing.T, want []byte) {
	t.Helper()
	done := make(chan struct{})
	var rest []byte
	var err error
	go func() {
		defer close(done)
		rest, err = io.ReadAll(s.res.Body)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not end after the stop")
	}
	if err != nil || !bytes.Equal(rest, want) {
		t.Errorf("the end of the watch: %q, %v; want %q and a clean end", rest, err, want)
	}
	if err := s.res.Body.Close(); err != nil {
		t.Errorf("closing: %v", err)
	}
}

// JSON watch events are lines: a stop between events ends the watch at once, and one within an
// event ends it after the event's last byte, even when the next event came in the same chunk.
func TestWatchEndsOnLineBoundary(t *testing.T) {
	s := newWatchStream("application/json")
	s.send([]byte(`{"type":"ADDED"}` + "\n"))
	s.read(t, len(`{"type":"ADDED"}`+"\n"))
	close(s.stop) // while the watch waits for its next event
	s.ends(t, nil)

	s = newWatchStream("application/json;stream=watch")
	s.send([]byte(`{"type":"ADDED"}` + "\n" + `{"type":"MOD`))
	s.read(t, len(`{"type":"ADDED"}`+"\n"+`{"type":"MOD`))
	close(s.stop)
	s.send([]byte(`IFIED"}` + "\n" + `{"type":"DELETED"}` + "\n"))
	s.ends(t, []byte(`IFIED"}`+"\n"))
}

// Protobuf watch events follow their 4-byte length: chunks that split the length or the payload
// still end on the event's last byte.
func TestWatchEndsOnLengthBoundary(t *testing.T) {
	frame := func(payload string) []byte {
		return binary.BigEndian.AppendUint32(nil, uint32(len(payload))) // followed by payload
	}
	event := func(payload string) []byte { return append(frame(payload), payload...) }
	s := newWatchStream("application/vnd.kubernetes.protobuf;stream=watch")
	first, second, third := event("first event"), event("second, longer event"), event("third")
	s.send(slices.Concat(first, second[:2])) // the second's length split
	s.read(t, len(first)+2)
	close(s.stop)
	s.send(slices.Concat(second[2:], third))
	s.ends(t, second[2:])
}

// Other responses to watches pass untouched: errors, and streams the proxy cannot frame, which
// are cut at the drain's timeout instead.
func TestWatchEndOnlyForFramedStreams(t *testing.T) {
	for _, tt := range []struct {
		status      int
		contentType string
	}{
		{http.StatusOK, "application/vnd.kubernetes.protobuf"},
		{http.StatusOK, "application/cbor-seq"},
		{http.StatusGone, "application/json;stream=watch"},
	} {
		body := io.NopCloser(strings.NewReader("x"))
		res := &http.Response{StatusCode: tt.status, Header: http.Header{"Content-Type": {tt.contentType}}, Body: body}
		endWatchOnStop(res, make(chan struct{}))
		if res.Body != body {
			t.Errorf("%d %s: the body was replaced", tt.status, tt.contentType)
		}
	}
}
