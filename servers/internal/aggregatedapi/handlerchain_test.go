package aggregatedapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
)

// Until the server stops, the aggregator keeps its connections; once it stops, each response
// closes its connection, so the aggregator's next request opens a new one (to a ready replica),
// and no request it has sent is refused.
func TestResponsesCloseTheirConnectionsOnceStopping(t *testing.T) {
	stopping := make(chan struct{})
	srv := httptest.NewUnstartedServer(closeWhenStopping(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, _ = w.Write(body)
	}), stopping))
	srv.EnableHTTP2 = false
	srv.StartTLS()
	defer srv.Close()
	client := srv.Client()

	// post sends a body, as the aggregator does for a TokenCredentialRequest, and reports
	// whether it went over a connection used before and whether the response closed it.
	post := func() (reused, closed bool) {
		t.Helper()
		var got httptrace.GotConnInfo
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { got = i }})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(`{"spec":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if b, _ := io.ReadAll(resp.Body); string(b) != `{"spec":{}}` || resp.ProtoMajor != 1 {
			t.Fatalf("response %q over HTTP/%d", b, resp.ProtoMajor)
		}
		return got.Reused, resp.Close
	}
	post()
	if reused, closed := post(); !reused || closed {
		t.Errorf("before the stop: connection reused %v, closed by the response %v; want kept", reused, closed)
	}
	close(stopping)
	if _, closed := post(); !closed {
		t.Error("a response once the server is stopping did not close its connection")
	}
	if reused, closed := post(); reused || !closed {
		t.Errorf("the next request: connection reused %v, closed %v; want a new connection, closed too", reused, closed)
	}
}
