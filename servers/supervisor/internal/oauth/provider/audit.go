package provider

import (
	"context"
	"net/url"

	"k8s.io/apimachinery/pkg/util/sets"

	"sealion.dev/servers/internal/audit"
)

// AuditUsing records which identity provider a login request uses, as Pinniped's "Using
// Upstream IDP" event.
func (p *Provider) AuditUsing(ctx context.Context, res *Resolved) {
	p.Audit.Event(ctx, "Using Upstream IDP", audit.Fields{},
		"displayName", res.IDP.DisplayName, "resourceName", res.IDP.Name, "resourceUID", res.IDP.UID, "type", res.IDP.Type)
}

// AuditAuthorizeID ties the requests of one browser login together, as Pinniped does, by the
// SHA-256 of its encoded state: message is "Upstream Authorize Redirect" when the login leaves
// for the upstream or the login form, "AuthorizeID From Parameters" when it comes back.
func (p *Provider) AuditAuthorizeID(ctx context.Context, message, encodedState string) {
	p.Audit.Event(ctx, message, audit.Fields{}, "authorizeID", p.Audit.TokenID(encodedState))
}

// AuditParams writes Pinniped's "HTTP Request Parameters" event: the first value of each of the
// request's parameters in "params", and every value of a repeated parameter in
// "multiValueParams" (only when one repeats). Only the values of the parameters in allowed are
// shown, the others are written "redacted": each endpoint allows, as Pinniped's, those that never
// carry a code, token, password, secret or state (which would let a reader of the log resume
// the login).
func (p *Provider) AuditParams(ctx context.Context, form url.Values, allowed sets.Set[string]) {
	params := make(map[string]string, len(form))
	multi := url.Values{}
	for key, values := range form {
		shown := make([]string, len(values))
		for i, v := range values {
			shown[i] = "redacted"
			if allowed.Has(key) {
				shown[i] = v
			}
		}
		if len(shown) > 0 {
			params[key] = shown[0]
		}
		if len(shown) > 1 {
			multi[key] = shown
		}
	}
	kv := []any{"params", params}
	if len(multi) > 0 {
		kv = append(kv, "multiValueParams", multi)
	}
	p.Audit.Event(ctx, "HTTP Request Parameters", audit.Fields{}, kv...)
}
