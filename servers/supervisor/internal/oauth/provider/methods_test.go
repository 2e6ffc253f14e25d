package provider

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// A refused method is answered as Pinniped's Supervisor answers it, naming the methods to try.
func TestAllowMethods(t *testing.T) {
	for _, tt := range []struct {
		method  string
		allowed []string
		want    string // "" when allowed
	}{
		{http.MethodGet, []string{http.MethodGet}, ""},
		{http.MethodPost, []string{http.MethodGet, http.MethodPost}, ""},
		{http.MethodPost, []string{http.MethodGet}, "Method Not Allowed: POST (try GET)\n"},
		{http.MethodHead, []string{http.MethodGet}, "Method Not Allowed: HEAD (try GET)\n"},
		{http.MethodPut, []string{http.MethodGet, http.MethodPost}, "Method Not Allowed: PUT (try GET or POST)\n"},
	} {
		rec := httptest.NewRecorder()
		ok := AllowMethods(rec, httptest.NewRequest(tt.method, "/", nil), tt.allowed...)
		switch {
		case tt.want == "" && (!ok || rec.Body.Len() != 0):
			t.Errorf("%s of %v refused: %d %q", tt.method, tt.allowed, rec.Code, rec.Body.String())
		case tt.want != "" && (ok || rec.Code != http.StatusMethodNotAllowed || rec.Body.String() != tt.want || rec.Header().Get("Content-Type") != "text/plain; charset=utf-8"):
			t.Errorf("%s of %v: %v, %d %q (%s); want 405 %q", tt.method, tt.allowed, ok, rec.Code, rec.Body.String(), rec.Header().Get("Content-Type"), tt.want)
		}
	}
}
