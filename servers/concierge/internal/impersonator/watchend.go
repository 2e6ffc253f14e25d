package impersonator

import (
	"bytes"
	"encoding/binary"
	"io"
	"mime"
	"net/http"
)

// The impersonation proxy ends the watches it relays when it stops, at an event boundary: the
// client sees the watch end as when the kube-apiserver ends one (at its timeout) and watches
// again from the last event it read, where a connection cut in the middle of an event is an
// error ("unexpected EOF") it logs and may report. Both encodings the kube-apiserver frames watch
// events in are understood: JSON (one object per line, served as application/json) and protobuf
// (each event after its 4-byte length, served with stream=watch). Others (CBOR sequences) are cut
// when the drain times out.

// endWatchOnStop replaces the body of res, the response to a watch, when its events are framed in
// a way the proxy knows, with one that ends at the first event boundary after stop closes.
func endWatchOnStop(res *http.Response, stop <-chan struct{}) {
	if stop == nil || res.StatusCode != http.StatusOK {
		return
	}
	f := watchFraming(res.Header.Get("Content-Type"))
	if f == nil {
		return
	}
	res.Body = newEndingWatch(res.Body, f, stop)
}

// watchFraming returns the framing of a watch stream of contentType, or nil.
func watchFraming(contentType string) framing {
	mediaType, params, err := mime.ParseMediaType(contentType)
	switch {
	case err != nil:
		return nil
	case mediaType == "application/json":
		return &lineFraming{atStart: true}
	case mediaType == "application/vnd.kubernetes.protobuf" && params["stream"] == "watch":
		return &lengthFraming{}
	}
	return nil
}

// framing follows a stream's event boundaries.
type framing interface {
	// atBoundary reports whether the bytes consumed so far end an event.
	atBoundary() bool
	// toBoundary returns how many of b's first bytes complete the current event (len(b) when it
	// goes on past b); only asked within an event.
	toBoundary(b []byte) int
	// consume follows the stream over b.
	consume(b []byte)
}

// lineFraming is JSON's: each event is one line.
type lineFraming struct{ atStart bool }

func (f *lineFraming) atBoundary() bool { return f.atStart }

func (f *lineFraming) toBoundary(b []byte) int {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return i + 1
	}
	return len(b)
}

func (f *lineFraming) consume(b []byte) {
	if len(b) > 0 {
		f.atStart = b[len(b)-1] == '\n'
	}
}

// lengthFraming is protobuf's: a 4-byte big-endian length, then that many bytes.
type lengthFraming struct {
	header [4]byte
	// headerRead counts the header's bytes read, payloadLeft the payload's still to come.
	headerRead  int
	payloadLeft uint32
}

func (f *lengthFraming) atBoundary() bool { return f.headerRead == 0 && f.payloadLeft == 0 }

func (f *lengthFraming) toBoundary(b []byte) int {
	probe := *f
	for n := 0; n < len(b); {
		n += probe.step(b[n:])
		if probe.atBoundary() {
			return n
		}
	}
	return len(b)
}

func (f *lengthFraming) consume(b []byte) {
	for len(b) > 0 {
		b = b[f.step(b):]
	}
}

// step consumes the header's or the payload's next bytes from b and returns how many.
func (f *lengthFraming) step(b []byte) int {
	if f.payloadLeft > 0 {
		n := min(uint32(len(b)), f.payloadLeft)
		f.payloadLeft -= n
		return int(n)
	}
	n := copy(f.header[f.headerRead:], b)
	f.headerRead += n
	if f.headerRead == len(f.header) {
		f.headerRead, f.payloadLeft = 0, binary.BigEndian.Uint32(f.header[:])
	}
	return n
}

// endingWatch is a watch body that ends at the first event boundary after stop closes. Reads
// from the kube-apiserver happen in a goroutine, so that a watch waiting for its next event ends
// at once.
type endingWatch struct {
	body    io.ReadCloser
	framing framing
	stop    <-chan struct{}
	chunks  chan chunk
	closed  chan struct{}
	pending []byte
	err     error
}

type chunk struct {
	data []byte
	err  error
}

func newEndingWatch(body io.ReadCloser, f framing, stop <-chan struct{}) *endingWatch {
	w := &endingWatch{body: body, framing: f, stop: stop, chunks: make(chan chunk), closed: make(chan struct{})}
	go w.pump()
	return w
}

func (w *endingWatch) pump() {
	for {
		buf := make([]byte, 32<<10)
		n, err := w.body.Read(buf)
		select {
		case w.chunks <- chunk{buf[:n], err}:
		case <-w.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

func (w *endingWatch) stopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

func (w *endingWatch) Read(p []byte) (int, error) {
	for len(w.pending) == 0 {
		if w.err != nil {
			return 0, w.err
		}
		// Between events a stop ends the watch; within one, the event is finished first.
		var stop <-chan struct{}
		if w.framing.atBoundary() {
			stop = w.stop
		}
		select {
		case c := <-w.chunks:
			w.pending, w.err = c.data, c.err
		case <-stop:
			w.err = io.EOF
		}
	}
	n := len(w.pending)
	if w.stopped() {
		if w.framing.atBoundary() {
			w.pending, w.err = nil, io.EOF
			return 0, io.EOF
		}
		n = w.framing.toBoundary(w.pending)
	}
	n = copy(p, w.pending[:n])
	w.framing.consume(w.pending[:n])
	w.pending = w.pending[n:]
	return n, nil
}

func (w *endingWatch) Close() error {
	select {
	case <-w.closed:
	default:
		close(w.closed)
	}
	return w.body.Close()
}
