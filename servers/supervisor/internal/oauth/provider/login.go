package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/token/jwt"
	"k8s.io/klog/v2"

	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/internal/clientaddr"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/idtransform"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
)

// Answers of the password flows, worded as Pinniped words them: clients show them to users.
var (
	ErrNoPasswordFlow = fosite.ErrAccessDenied.WithHint("Resource owner password credentials grant is not allowed for this upstream provider according to its configuration.")
	errUpstreamFailed = fosite.ErrTemporarilyUnavailable.WithHint("Unexpected error during upstream authentication.")
)

// AuthorizeError answers an authorize request with an error, as a redirect to the client when
// its redirect URI is valid. The CLI's password flow reads the redirect without following it,
// and gets 302 Found rather than fosite's 303 See Other.
func (p *Provider) AuthorizeError(ctx context.Context, w http.ResponseWriter, ar fosite.AuthorizeRequester, err error, browserless bool) {
	if browserless {
		w = foundRedirects{w}
	}
	setFormPostPolicy(w, ar)
	p.OAuth.WriteAuthorizeError(ctx, w, ar, err)
}

// foundRedirects turns 303 See Other into 302 Found.
type foundRedirects struct{ http.ResponseWriter }

func (w foundRedirects) WriteHeader(code int) {
	if code == http.StatusSeeOther {
		code = http.StatusFound
	}
	w.ResponseWriter.WriteHeader(code)
}

// LoginError answers a login that the connector failed: with the connector's hint when the
// upstream refused the user, as UpstreamUnavailable when it could not be reached; any other
// failure is logged and answered as an upstream failure, so that its details do not reach the
// user.
func (p *Provider) LoginError(ctx context.Context, res *Resolved, err error) error {
	var e *connectors.Error
	if !errors.As(err, &e) {
		klog.FromContext(ctx).Error(err, "Upstream authentication failed", "idp", res.IDP.DisplayName, "type", res.IDP.Type)
		return errUpstreamFailed.WithWrap(err)
	}
	if e.Unavailable {
		klog.FromContext(ctx).Info("Upstream unreachable", "idp", res.IDP.DisplayName, "type", res.IDP.Type, "error", err.Error())
		return p.UpstreamUnavailable(res, err)
	}
	answer := fosite.ErrAccessDenied
	if e.Hint != "" {
		answer = answer.WithHint(e.Hint)
	}
	if e.Err != nil {
		answer = answer.WithWrap(e.Err)
	}
	return answer
}

// FinishLogin transforms the upstream identity and answers the downstream authorize request with
// our own authorization code.
func (p *Provider) FinishLogin(w http.ResponseWriter, r *http.Request, ar fosite.AuthorizeRequester, idp *issuer.IdentityProvider, user *connectors.Identity, browserless bool) {
	ctx := r.Context()
	p.Audit.Event(ctx, "Identity From Upstream IDP", audit.Fields{PersonalInfo: []any{"upstreamUsername", user.Username, "upstreamGroups", user.Groups}},
		"upstreamIDPDisplayName", idp.DisplayName, "upstreamIDPType", idp.Type, "upstreamIDPResourceName", idp.Name, "upstreamIDPResourceUID", idp.UID)
	downstream, err := p.Transform(ctx, idp, idtransform.Identity{Username: user.Username, Groups: user.Groups})
	if err != nil {
		p.AuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint(err.Error()), browserless)
		return
	}
	GrantScopes(ar)
	session := p.newLoginSession(ar, idp, user, downstream)
	resp, err := p.OAuth.NewAuthorizeResponse(ctx, ar, session)
	if err != nil {
		p.AuthorizeError(ctx, w, ar, err, browserless)
		return
	}
	p.Audit.Event(ctx, "Session Started", audit.Fields{SessionID: ar.GetID(), PersonalInfo: []any{
		"username", session.Custom.Username, "groups", session.Custom.Groups, "subject", session.Subject, "additionalClaims", user.AdditionalClaims,
	}}, "warnings", []string{})
	if browserless {
		w = foundRedirects{w}
	}
	setFormPostPolicy(w, ar)
	p.OAuth.WriteAuthorizeResponse(ctx, w, ar, resp)
}

// GrantScopes grants the requested scopes the Supervisor knows; others (profile, email) are
// accepted but not granted. The pinniped CLI is granted username and groups whether it asked or
// not, as Pinniped grants them: CLIs from before those scopes never ask, and the Concierge needs
// the claims.
func GrantScopes(ar fosite.AuthorizeRequester) {
	for _, scope := range []string{ScopeOpenID, ScopeOfflineAccess, ScopeRequestAudience, ScopeUsername, ScopeGroups} {
		if ar.GetRequestedScopes().Has(scope) {
			ar.GrantScope(scope)
		}
	}
	if ar.GetClient().GetID() == PinnipedCLIClientID {
		ar.GrantScope(ScopeUsername)
		ar.GrantScope(ScopeGroups)
	}
}

// ErrReservedIdentity is the answer, as a hint, to a login or refresh whose identity carries a
// name Kubernetes reserves: the uniform wording of the Concierge, so that the answer tells nothing
// about which name was refused.
var ErrReservedIdentity = errors.New("authentication failed")

// Transform runs the identity provider's identity transformations and refuses a result that
// carries a reserved name (RefuseReserved).
func (s *Shared) Transform(ctx context.Context, idp *issuer.IdentityProvider, id idtransform.Identity) (idtransform.Identity, error) {
	res, err := idp.Transforms.Evaluate(ctx, id)
	if err != nil {
		return idtransform.Identity{}, fmt.Errorf("identity transformations failed: %w", err)
	}
	if res.Rejected {
		s.Audit.Event(ctx, "Authentication Rejected By Transforms", audit.Fields{}, "reason", res.Message)
		return idtransform.Identity{}, errors.New(res.Message)
	}
	if err := s.RefuseReserved(ctx, idp.DisplayName, res.Identity); err != nil {
		return idtransform.Identity{}, err
	}
	return res.Identity, nil
}

// RefuseReserved returns ErrReservedIdentity when id carries a "system:" username or group the
// operator did not allow: the downstream token would be a credential for Kubernetes' own
// identities on every cluster that trusts this Supervisor. The checked identity is the one after
// the transformations, so neither an upstream nor a transformation can produce such a name. The
// refused name goes to the log at the default level; tokens never do.
func (s *Shared) RefuseReserved(ctx context.Context, idpName string, id idtransform.Identity) error {
	if reason := s.Reserved.Refused(id.Username, id.Groups); reason != "" {
		klog.FromContext(ctx).Info("Identity refused", "idp", idpName, "reason", reason)
		return ErrReservedIdentity
	}
	return nil
}

// AuthorizedPartyClaim is the ID token claim naming the client the tokens were issued to (azp).
const AuthorizedPartyClaim = "azp"

// newLoginSession is the session of a fresh login for the authorize request ar.
func (p *Provider) newLoginSession(ar fosite.Requester, idp *issuer.IdentityProvider, user *connectors.Identity, downstream idtransform.Identity) *sessions.Session {
	s := sessions.NewSession()
	now := p.Now().UTC()
	s.Custom = sessions.CustomSessionData{
		ProviderName: idp.DisplayName, ProviderResource: idp.Name, ProviderUID: string(idp.UID), ProviderType: string(idp.Type),
		UpstreamUsername: user.Username, UpstreamGroups: user.Groups,
		LoginTime:        now,
		FederationDomain: p.Issuer.Name,
		Session:          user.Session,
		AdditionalClaims: user.AdditionalClaims,
	}
	s.Subject = user.Subject
	s.Username = downstream.Username
	// As upstream: azp names the client of the login and stays in refreshed and exchanged tokens;
	// rat and auth_time are the login's.
	s.Claims = &jwt.IDTokenClaims{Subject: s.Subject, RequestedAt: now, AuthTime: now,
		Extra: map[string]any{AuthorizedPartyClaim: ar.GetClient().GetID()}}
	s.Headers = &jwt.Headers{Extra: map[string]any{"kid": p.keyID}}
	SetIdentity(s, downstream, ar)
	if len(user.AdditionalClaims) > 0 {
		s.Claims.Extra[sessions.AdditionalClaimsClaim] = user.AdditionalClaims
	}
	s.SetExpiresAt(fosite.RefreshToken, p.SessionPolicy(ar.GetClient()).End(now, time.Time{}))
	return s
}

// SetIdentity records the downstream identity in the session, and in its ID token claims when
// req, the request the tokens are issued for, was granted the username and groups scopes. The
// pinniped-cli client always gets both, whatever scopes it asked for.
func SetIdentity(s *sessions.Session, id idtransform.Identity, req fosite.Requester) {
	groups := id.Groups
	if groups == nil {
		groups = []string{}
	}
	s.Custom.Username, s.Custom.Groups = id.Username, groups
	if s.Claims.Extra == nil {
		s.Claims.Extra = map[string]any{}
	}
	delete(s.Claims.Extra, "username")
	delete(s.Claims.Extra, "groups")
	if GrantedClaim(req, ScopeUsername) {
		s.Claims.Extra["username"] = id.Username
	}
	if GrantedClaim(req, ScopeGroups) {
		s.Claims.Extra["groups"] = groups
	}
}

// GrantedClaim reports whether tokens issued for req carry the claim of scope (username or groups).
func GrantedClaim(req fosite.Requester, scope string) bool {
	return req.GetClient().GetID() == PinnipedCLIClientID || req.GetGrantedScopes().Has(scope)
}

// AllowAttempt counts a password attempt of username at the identity provider of res and
// reports whether it may go upstream (see AttemptLimiter).
func (p *Provider) AllowAttempt(res *Resolved, username string) bool {
	return p.Logins.allow(loginKey(string(res.IDP.Type)+"/"+p.Issuer.Namespace+"/"+res.IDP.Name, username))
}

// AllowUserCodeEntry counts an entry of a user code at the verification page from the request's
// source and reports whether it may be looked up (see AttemptLimiter).
func (p *Provider) AllowUserCodeEntry(r *http.Request) bool {
	return p.DeviceCodes.allow(clientaddr.Source(r))
}

// AllowDeviceStart counts a device authorization started from the request's source and reports
// whether it may be stored (see AttemptLimiter).
func (p *Provider) AllowDeviceStart(r *http.Request) bool {
	return p.DeviceStarts.allow(clientaddr.Source(r))
}

// PasswordLogin checks a username and password with the identity provider's connector.
func (p *Provider) PasswordLogin(ctx context.Context, res *Resolved, username, password string) (*connectors.Identity, error) {
	conn, ok := res.Conn.(connectors.PasswordConnector)
	if !ok {
		return nil, ErrNoPasswordFlow
	}
	callCtx, call := connectors.StartCall(ctx, res.IDP.Type, connectors.OpPassword)
	user, err := conn.Authenticate(callCtx, p.ConnectorLogin(res), username, password)
	call.End(err)
	var refused *connectors.Error
	if errors.As(err, &refused) && !refused.Unavailable {
		p.Audit.Event(ctx, "Incorrect Username Or Password", audit.Fields{})
	}
	if err != nil {
		return nil, p.LoginError(ctx, res, err)
	}
	return user, nil
}
