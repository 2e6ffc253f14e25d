package provider

import (
	"context"

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
	p.Audit.Event(ctx, message, audit.Fields{}, "authorizeID", audit.TokenID(encodedState))
}
