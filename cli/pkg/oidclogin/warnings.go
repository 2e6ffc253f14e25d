package oidclogin

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// warningPrinter shows the user the Warning headers of the issuer's answers: a Pinniped Supervisor
// sends login warnings that way (Kubernetes style, `299 - "text"`).
type warningPrinter struct {
	next http.RoundTripper
	out  io.Writer
}

func (w warningPrinter) RoundTrip(req *http.Request) (*http.Response, error) {
	next := w.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(req)
	if err == nil {
		for _, v := range resp.Header.Values("Warning") {
			fmt.Fprintf(w.out, "Warning: %s\n", warningText(v))
		}
	}
	return resp, err
}

// warningText is the text of an RFC 7234 warning value: code, agent, quoted text.
func warningText(v string) string {
	parts := strings.SplitN(v, " ", 3)
	if len(parts) == 3 {
		if text, err := strconv.Unquote(parts[2]); err == nil {
			return text
		}
	}
	return v
}
