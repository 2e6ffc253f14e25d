package impersonator

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// When the proxy stops, the watches it relays from a real kube-apiserver end cleanly on an event
// boundary, in JSON and in protobuf, over HTTP/1.1 and HTTP/2: the client reads whole events and
// then the end of the stream, never an error in the middle of one, and watches again.
func TestProxyEndsWatchesCleanlyOnStop(t *testing.T) {
	p := startProxy(t)
	ctx := context.Background()
	_, err := p.admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "watch-configmaps"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	bind(t, p.admin, "default", "seals-watch", "watch-configmaps", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "seals"})
	tlsConfig := p.clientTLS(t, p.signer, "pinny", []string{"seals"}, nil)

	type watch struct {
		name string
		body io.ReadCloser
		// next reads one whole event.
		next func(*bufio.Reader) ([]byte, error)
	}
	readLine := func(r *bufio.Reader) ([]byte, error) {
		line, err := r.ReadBytes('\n')
		if err == nil && !json.Valid(line) {
			err = fmt.Errorf("not a JSON event: %q", line)
		}
		return line, err
	}
	readFrame := func(r *bufio.Reader) ([]byte, error) {
		var size [4]byte
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return nil, err
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		_, err := io.ReadFull(r, frame)
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // a length without its event is a cut
		}
		return frame, err
	}
	var watches []*watch
	for _, proto := range []string{"HTTP/1.1", "HTTP/2"} {
		transport := &http.Transport{TLSClientConfig: tlsConfig.Clone(), ForceAttemptHTTP2: proto == "HTTP/2"}
		if proto == "HTTP/1.1" {
			transport.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		}
		for _, enc := range []struct {
			accept string
			next   func(*bufio.Reader) ([]byte, error)
		}{
			{"application/json", readLine},
			{"application/vnd.kubernetes.protobuf;stream=watch", readFrame},
		} {
			// RBAC, and the proxy's cache of denials, take a moment to see the new binding.
			var resp *http.Response
			require.NoError(t, wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/api/v1/namespaces/default/configmaps?watch=true", nil)
				if err != nil {
					return false, err
				}
				req.Header.Set("Accept", enc.accept)
				if resp, err = (&http.Client{Transport: transport}).Do(req); err != nil {
					return false, err
				}
				if resp.StatusCode == http.StatusForbidden {
					_ = resp.Body.Close()
					return false, nil
				}
				return true, nil
			}))
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, proto, resp.Proto[:len(proto)])
			t.Cleanup(func() { _ = resp.Body.Close() })
			watches = append(watches, &watch{name: proto + " " + enc.accept, body: resp.Body, next: enc.next})
		}
	}

	// Events flow, and keep flowing while the proxy stops.
	created := make(chan struct{})
	go func() {
		defer close(created)
		for i := range 50 {
			_, _ = p.admin.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("event-%d", i)}}, metav1.CreateOptions{})
		}
	}()
	readers := make([]*bufio.Reader, len(watches))
	for i, w := range watches {
		readers[i] = bufio.NewReader(w.body)
		if _, err := w.next(readers[i]); err != nil {
			t.Fatalf("%s: the first event: %v", w.name, err)
		}
	}
	close(p.stopping)
	for i, w := range watches {
		ended := make(chan error, 1)
		go func() {
			for {
				if _, err := w.next(readers[i]); err != nil {
					ended <- err
					return
				}
			}
		}()
		select {
		case err := <-ended:
			if err != io.EOF {
				t.Errorf("%s: the watch ended with %v, want a clean end between events", w.name, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s: the watch did not end after the stop", w.name)
		}
	}
	<-created
}
