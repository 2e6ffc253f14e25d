package provider

import "net/http"

// AllowMethods answers 405 Method Not Allowed, in the words of Pinniped's Supervisor (for example
// "Method Not Allowed: PUT (try GET or POST)"), unless the request's method is one of allowed, and
// reports whether it is.
func AllowMethods(w http.ResponseWriter, r *http.Request, allowed ...string) bool {
	try := ""
	for i, m := range allowed {
		if m == r.Method {
			return true
		}
		if i > 0 {
			try += " or "
		}
		try += m
	}
	http.Error(w, http.StatusText(http.StatusMethodNotAllowed)+": "+r.Method+" (try "+try+")", http.StatusMethodNotAllowed)
	return false
}
