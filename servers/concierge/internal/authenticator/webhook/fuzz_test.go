package webhook

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	kjson "sigs.k8s.io/json"
)

// FuzzTokenReviewResponse answers the authenticator's TokenReview with arbitrary bodies. A user
// is authenticated only when the body is a TokenReview whose status says authenticated, and then
// exactly as its status names them (decoded case-sensitively, as Kubernetes decodes it); any
// other body, unauthenticated, malformed or not a TokenReview, authenticates nobody.
func FuzzTokenReviewResponse(f *testing.F) {
	var (
		mu   sync.Mutex
		body []byte
	)
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	f.Cleanup(server.Close)
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
	authn, result := New(context.Background(), Config{Endpoint: server.URL, CABundle: caBundle, APIVersion: "v1"})
	if !result.OK() {
		f.Fatalf("New() failed: %v", result.Err())
	}

	for _, seed := range []string{
		`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","status":{"authenticated":true,"user":{"username":"alice","uid":"1","groups":["devs"],"extra":{"k":["v"]}}}}`,
		`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","status":{"authenticated":false,"user":{"username":"alice"}}}`,
		`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","status":{"authenticated":"true","user":{"username":"alice"}}}`,
		`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","status":{"Authenticated":true,"user":{"username":"alice"}}}`,
		`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","status":{"authenticated":false,"error":"no such token"}}`,
		`{"apiVersion":"authentication.k8s.io/v1beta1","kind":"TokenReview","status":{"authenticated":true,"user":{"username":"bob"}}}`,
		`{"kind":"Status","apiVersion":"v1","status":"Failure","code":401}`,
		`{"status":{"authenticated":true}}`,
		`{"status":{"authenticated":true,"user":{"username":"alice"}},"status":{"authenticated":false}}`,
		`[]`, `null`, ``, `{`, "\xff\x00",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, answer []byte) {
		mu.Lock()
		body = answer
		mu.Unlock()
		resp, ok, err := authn.AuthenticateToken(context.Background(), "some-token")
		if !ok {
			if resp != nil {
				t.Fatalf("a rejection came with a user: %+v (err %v)", resp.User, err)
			}
			return
		}
		var said authenticationv1.TokenReview
		if err := kjson.UnmarshalCaseSensitivePreserveInts(answer, &said); err != nil || !said.Status.Authenticated {
			t.Fatalf("authenticated %+v from an answer that does not say so (%v): %q", resp.User, err, answer)
		}
		u := said.Status.User
		if resp.User.GetName() != u.Username || resp.User.GetUID() != u.UID || !slices.Equal(resp.User.GetGroups(), u.Groups) {
			t.Fatalf("authenticated %+v; the answer names %+v", resp.User, u)
		}
	})
}
