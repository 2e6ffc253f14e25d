// Package token serves the token endpoint: it redeems authorization codes, refreshes tokens
// after re-checking the user at the upstream identity provider, exchanges an access token for a
// cluster-scoped ID token (RFC 8693 token exchange, the grant of the pinniped CLI's kubectl
// logins), and answers device code polls (RFC 8628), redeeming the approved login's code.
package token

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/token/jwt"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/internal/clientaddr"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/idtransform"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
)

// auditedParams are the token parameters whose values the audit log shows, Pinniped's list: no
// code, verifier, token or client secret.
var auditedParams = sets.New("grant_type", "client_id", "redirect_uri", "scope", "audience", "resource",
	"requested_token_type", "actor_token_type", "subject_token_type")

// endpoint serves the token endpoint of an issuer.
type endpoint struct{ *provider.Provider }

// New registers the token exchange grant with p and returns the token endpoint of its issuer.
func New(p *provider.Provider) http.Handler {
	p.AddTokenEndpointHandler(&tokenExchange{p})
	return http.HandlerFunc(endpoint{p}.token)
}

// token serves the token endpoint. Refreshes first re-check the user at the upstream identity
// provider and re-run identity transformations, so that a user removed upstream loses access
// at the next refresh.
func (p endpoint) token(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	obs := &observation{federationDomain: p.Issuer.Name, grant: grantLabel(r.PostForm.Get("grant_type")), idpType: "unknown", result: "success", start: time.Now()}
	defer obs.record()
	writeError := func(ar fosite.AccessRequester, err error) {
		obs.result = resultLabel(err)
		p.OAuth.WriteAccessError(ctx, w, ar, err)
	}
	p.AuditParams(ctx, r.Form, auditedParams)
	client, basic := provider.ClientID(r)
	if basic {
		p.Audit.Event(ctx, "HTTP Request Basic Auth", audit.Fields{}, "clientID", client)
	}
	// A source that failed too often gets no new secret comparison, but a secret verified before
	// still works: a stranger failing on purpose blocks only itself.
	source := clientaddr.Source(r)
	fositeCtx := ctx
	if p.ClientFailures.Blocked(client, source) {
		fositeCtx = provider.WithoutNewComparisons(ctx)
	}
	if r.PostForm.Get("grant_type") == provider.GrantDeviceCode && !p.pollDevice(w, r) {
		obs.result = "polled" // answered by the device poll: pending, slowed down, denied or expired
		return
	}
	ar, err := p.OAuth.NewAccessRequest(fositeCtx, r, sessions.NewSession())
	if err != nil {
		switch {
		case errors.Is(err, fosite.ErrTokenExpired) && r.PostForm.Get("grant_type") == provider.GrantRefreshToken:
			err = p.expiredRefresh(ctx, r.PostForm.Get("refresh_token"), err)
		case errors.Is(err, provider.ErrComparisonRefused):
			err = provider.ErrClientBlocked
		case errors.Is(err, fosite.ErrInvalidClient) && p.KnownClient(ctx, client):
			// Only failures that cost a secret comparison count: an unknown client costs
			// nothing, and counting it would let made-up client IDs crowd out the real ones.
			p.ClientFailures.Failed(client, source)
		}
		writeError(ar, err)
		return
	}
	exchange := ar.GetGrantTypes().ExactOne(provider.GrantTokenExchange)
	if !exchange {
		// fosite gives a code's or refresh token's request the ID of the login's stored session.
		p.Audit.Event(ctx, "Session Found", audit.Fields{SessionID: ar.GetID()})
	}
	s, ok := ar.GetSession().(*sessions.Session)
	if ok && s.Custom.ProviderType != "" {
		obs.idpType = s.Custom.ProviderType
	}
	if ok && !exchange {
		if err := p.continueSession(s, ar); err != nil {
			writeError(ar, err)
			return
		}
		if ar.GetGrantTypes().ExactOne(provider.GrantRefreshToken) {
			warnings, err := p.refreshUpstream(ctx, s, ar)
			if err != nil {
				writeError(ar, err)
				return
			}
			addWarnings(w.Header(), warnings)
		}
	}
	resp, err := p.OAuth.NewAccessResponse(ctx, ar)
	if exchange && ok && s.Custom.ProviderType != "" {
		obs.idpType = s.Custom.ProviderType // known once the grant has found the login's session
	}
	if ar.GetGrantTypes().ExactOne(provider.GrantAuthorizationCode) && lostCodeRace(err) {
		// fosite answers a storage failure with server_error; losing a race for a code is a
		// replay (RFC 6749 4.1.2).
		err = fosite.ErrInvalidGrant.WithHint("The authorization code has already been used.").WithWrap(err)
	}
	if err != nil {
		writeError(ar, err)
		return
	}
	// The ID token of a code or a refresh, the access token of an exchange: a cluster's
	// TokenCredentialRequest audits the same token ID.
	idToken, _ := resp.GetExtra("id_token").(string)
	if exchange {
		idToken = resp.GetAccessToken()
	}
	if idToken != "" {
		p.Audit.Event(ctx, "ID Token Issued", audit.Fields{SessionID: ar.GetID()}, "tokenID", p.Audit.TokenID(idToken))
	}
	if ok && !exchange && resp.GetExtra("refresh_token") != nil {
		resp.SetExtra(SessionExpiresIn, p.sessionExpiresIn(s, ar))
	}
	p.OAuth.WriteAccessResponse(ctx, w, ar, resp)
}

// continueSession refuses a code redemption or refresh of a session that its policy ended (the
// current policy: a shortened one applies to sessions already started), and otherwise sets the
// expiries of a refresh's tokens: the refresh token's is the session's end, which a refresh moves
// on when there is an idle timeout, and no access token outlives the session. (fosite reads a
// code's session again from storage when it issues the tokens, so a redemption's are as the login
// set them: the refresh token's from the policy, the access token's two minutes, which only the
// token exchange accepts, and it checks the session's end itself.)
func (p endpoint) continueSession(s *sessions.Session, ar fosite.AccessRequester) error {
	if err := p.SessionEnded(s, ar); err != nil {
		return err
	}
	policy := p.SessionPolicy(ar.GetClient())
	now := p.Now().UTC()
	if ar.GetGrantTypes().ExactOne(provider.GrantRefreshToken) {
		s.Custom.LastRefreshTime = now
	}
	end := policy.End(s.Custom.LoginTime, s.Custom.LastRefreshTime)
	s.SetExpiresAt(fosite.RefreshToken, end)
	if s.GetExpiresAt(fosite.AccessToken).After(end) {
		s.SetExpiresAt(fosite.AccessToken, end)
	}
	return nil
}

// expiredRefresh explains fosite's refusal of an expired refresh token: the token endpoint set
// its expiry to its session's end, so the session ended, and the reason is found in its stored
// session. err is returned as it is when the record cannot say.
func (p endpoint) expiredRefresh(ctx context.Context, refreshToken string, err error) error {
	req, lookupErr := p.RefreshTokenSession(ctx, refreshToken)
	if lookupErr != nil {
		return err
	}
	s, ok := req.GetSession().(*sessions.Session)
	if !ok {
		return err
	}
	if ended := p.SessionEnded(s, req); ended != nil {
		return ended
	}
	return err
}

// SessionExpiresIn is the token response member, ours, that tells a client with a refresh token
// in how many seconds its session reaches its maximum length, when it will have to log in again
// however often it refreshes (an idle timeout may end it sooner). The pinniped CLI warns its user
// shortly before, and pinniped whoami shows it.
const SessionExpiresIn = "session_expires_in"

func (p endpoint) sessionExpiresIn(s *sessions.Session, ar fosite.Requester) int64 {
	end := s.Custom.LoginTime.Add(p.SessionPolicy(ar.GetClient()).Max)
	return max(0, int64(end.Sub(p.Now()).Seconds()))
}

// lostCodeRace reports whether a code redemption failed because a concurrent one won: the code
// was deactivated between fosite's reads of it or under this request, or the winner already
// deleted the login's PKCE or OpenID Connect record.
func lostCodeRace(err error) bool {
	return errors.Is(err, sessions.ErrAlreadyUsed) || errors.Is(err, fosite.ErrInvalidatedAuthorizeCode) || errors.Is(err, fosite.ErrNotFound)
}

// refusedRefresh is the error of a refresh that the upstream check refused.
func refusedRefresh(format string, args ...any) *fosite.RFC6749Error {
	return fosite.ErrInvalidGrant.WithHintf("Upstream refresh failed: "+format, args...)
}

// refreshUpstream re-checks the session's user at the upstream identity provider, re-runs the
// identity transformations and updates the session's identity for the refresh request ar. It
// returns the warnings for the client (groupChangeWarnings).
func (p endpoint) refreshUpstream(ctx context.Context, s *sessions.Session, ar fosite.Requester) ([]string, error) {
	res, err := p.SessionIdentityProvider(s.Custom.ProviderName, s.Custom.ProviderResource, s.Custom.ProviderUID)
	if err != nil {
		return nil, refusedRefresh("%v", err)
	}
	if string(res.IDP.UID) != s.Custom.ProviderUID || string(res.IDP.Type) != s.Custom.ProviderType {
		return nil, refusedRefresh("identity provider %q was replaced since the login", res.IDP.DisplayName)
	}
	conn, ok := res.Conn.(connectors.RefreshConnector)
	if !ok {
		return nil, refusedRefresh("identity provider %q cannot re-check its users", res.IDP.DisplayName)
	}
	callCtx, call := connectors.StartCall(ctx, res.IDP.Type, connectors.OpRefresh)
	up, err := conn.Refresh(callCtx, p.ConnectorLogin(res), connectors.Identity{
		Subject: s.Subject, Username: s.Custom.UpstreamUsername, Groups: s.Custom.UpstreamGroups, Session: s.Custom.Session,
	})
	call.End(err)
	if err != nil {
		return nil, p.refreshError(ctx, res, err)
	}
	p.Audit.Event(ctx, "Identity Refreshed From Upstream IDP", audit.Fields{PersonalInfo: []any{"upstreamUsername", up.Username, "upstreamGroups", up.Groups}})
	if up.Username != s.Custom.UpstreamUsername {
		return nil, refusedRefresh("the upstream identity changed since the login")
	}
	down, err := p.Transform(ctx, res.IDP, idtransform.Identity{Username: s.Custom.UpstreamUsername, Groups: up.Groups})
	if err != nil {
		return nil, refusedRefresh("%v", err)
	}
	if down.Username != s.Custom.Username {
		return nil, refusedRefresh("the username changed since the login")
	}
	warnings := groupChangeWarnings(ar.GetClient().GetID(), down.Username, s.Custom.Groups, down.Groups)
	s.Custom.UpstreamGroups = up.Groups
	s.Custom.Session = up.Session
	provider.SetIdentity(s, down, ar)
	p.Audit.Event(ctx, "Session Refreshed", audit.Fields{SessionID: ar.GetID(), PersonalInfo: []any{"username", s.Custom.Username, "groups", s.Custom.Groups, "subject", s.Subject}})
	return warnings, nil
}

// groupChangeWarnings are the warnings Pinniped's Supervisor gives its CLI when a refresh changed
// the user's groups, which kubectl prints. Only pinniped-cli gets them: another client would not
// look for them, and one without the username scope would learn the username from them.
func groupChangeWarnings(clientID, username string, before, after []string) []string {
	if clientID != provider.PinnipedCLIClientID {
		return nil
	}
	var warnings []string
	if added := sets.List(sets.New(after...).Difference(sets.New(before...))); len(added) > 0 {
		warnings = append(warnings, fmt.Sprintf("User %q has been added to the following groups: %q", username, added))
	}
	if removed := sets.List(sets.New(before...).Difference(sets.New(after...))); len(removed) > 0 {
		warnings = append(warnings, fmt.Sprintf("User %q has been removed from the following groups: %q", username, removed))
	}
	return warnings
}

// addWarnings adds warnings to a response as Kubernetes-style Warning headers (299, agent "-"),
// the form the pinniped CLI and kubectl print.
func addWarnings(h http.Header, warnings []string) {
	for _, text := range warnings {
		if v, err := utilnet.NewWarningHeader(299, "-", text); err == nil {
			h.Add("Warning", v)
		}
	}
}

// refreshError answers a refresh that the connector failed: invalid_grant with the connector's
// hint when the upstream refused the user, UpstreamUnavailable when it could not be reached, so
// that the client keeps the session and tries again later.
func (p endpoint) refreshError(ctx context.Context, res *provider.Resolved, err error) error {
	var e *connectors.Error
	if !errors.As(err, &e) {
		klog.FromContext(ctx).Error(err, "Upstream refresh failed", "idp", res.IDP.DisplayName, "type", res.IDP.Type)
		return refusedRefresh("the upstream identity provider failed").WithWrap(err)
	}
	if e.Unavailable {
		klog.FromContext(ctx).Info("Upstream unreachable", "idp", res.IDP.DisplayName, "type", res.IDP.Type, "error", err.Error())
		return p.UpstreamUnavailable(res, err)
	}
	klog.FromContext(ctx).V(1).Info("Upstream refresh refused", "idp", res.IDP.DisplayName, "error", err.Error())
	answer := refusedRefresh("%s", e.Hint)
	if e.Err != nil {
		answer = answer.WithWrap(e.Err)
	}
	return answer
}

// Token exchange (RFC 8693) parameter values.
const (
	tokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
	tokenTypeJWT         = "urn:ietf:params:oauth:token-type:jwt"
)

// tokenExchange trades a Supervisor access token for an ID token whose audience is a cluster
// (its JWTAuthenticator audience).
type tokenExchange struct{ *provider.Provider }

var _ fosite.TokenEndpointHandler = (*tokenExchange)(nil)

func (t *tokenExchange) CanSkipClientAuth(context.Context, fosite.AccessRequester) bool {
	return false
}

func (t *tokenExchange) CanHandleTokenEndpointRequest(_ context.Context, r fosite.AccessRequester) bool {
	return r.GetGrantTypes().ExactOne(provider.GrantTokenExchange)
}

func (t *tokenExchange) HandleTokenEndpointRequest(ctx context.Context, r fosite.AccessRequester) error {
	if !t.CanHandleTokenEndpointRequest(ctx, r) {
		return fosite.ErrUnknownRequest
	}
	return nil
}

// unsupportedExchangeParams are RFC 8693's optional parameters, which the exchange refuses as
// upstream's does rather than ignore.
var unsupportedExchangeParams = []string{"resource", "scope", "actor_token", "actor_token_type"}

// exchangeParamsError checks the parameters of a token exchange in upstream's order and with its
// hints, which clients and scripts match.
func exchangeParamsError(form url.Values) error {
	audience := form.Get("audience")
	switch {
	case audience == "":
		return fosite.ErrInvalidRequest.WithHint("Missing 'audience' parameter.")
	case form.Get("subject_token") == "":
		return fosite.ErrInvalidRequest.WithHint("Missing 'subject_token' parameter.")
	case form.Get("subject_token_type") != tokenTypeAccessToken:
		return fosite.ErrInvalidRequest.WithHintf("Unsupported 'subject_token_type' parameter value, must be %q.", tokenTypeAccessToken)
	case form.Get("requested_token_type") != tokenTypeJWT:
		return fosite.ErrInvalidRequest.WithHintf("Unsupported 'requested_token_type' parameter value, must be %q.", tokenTypeJWT)
	}
	for _, param := range unsupportedExchangeParams {
		if form.Get(param) != "" {
			return fosite.ErrInvalidRequest.WithHintf("Unsupported parameter %q.", param)
		}
	}
	// The exchanged token must not pass for one of the Supervisor's own clients (pinniped-cli,
	// client.oauth.pinniped.dev-*) or for names reserved to it.
	switch {
	case strings.Contains(audience, ".pinniped.dev"):
		return fosite.ErrInvalidRequest.WithHint("requested audience cannot contain '.pinniped.dev'")
	case audience == provider.PinnipedCLIClientID:
		return fosite.ErrInvalidRequest.WithHintf("requested audience cannot equal '%s'", provider.PinnipedCLIClientID)
	}
	return nil
}

func (t *tokenExchange) PopulateTokenEndpointResponse(ctx context.Context, r fosite.AccessRequester, resp fosite.AccessResponder) error {
	if !t.CanHandleTokenEndpointRequest(ctx, r) {
		return fosite.ErrUnknownRequest
	}
	form := r.GetRequestForm()
	if err := exchangeParamsError(form); err != nil {
		return err
	}
	subjectToken := form.Get("subject_token")
	orig, err := t.AccessTokenSession(ctx, subjectToken)
	if err != nil {
		return fosite.ErrRequestUnauthorized.WithWrap(err).WithHint("Invalid 'subject_token' parameter value.")
	}
	s, ok := orig.GetSession().(*sessions.Session)
	if !ok {
		return fosite.ErrServerError.WithHint("unexpected session type")
	}
	// Checked first: an access token that expired with its session says so.
	if err := t.SessionEnded(s, orig); err != nil {
		return err
	}
	if err := t.ValidateAccessToken(ctx, orig, subjectToken); err != nil {
		return err
	}
	if orig.GetClient().GetID() != r.GetClient().GetID() {
		return fosite.ErrInvalidGrant.WithHint("The OAuth 2.0 Client ID from this request does not match the one from the authorize request.")
	}
	if !r.GetClient().GetGrantTypes().Has(provider.GrantTokenExchange) {
		return fosite.ErrUnauthorizedClient.WithHintf("The OAuth 2.0 Client is not allowed to use token exchange grant %q.", provider.GrantTokenExchange)
	}
	for _, scope := range []string{provider.ScopeRequestAudience, provider.ScopeOpenID} {
		if !orig.GetGrantedScopes().Has(scope) {
			return fosite.ErrAccessDenied.WithHintf("Missing the %q scope.", scope)
		}
	}
	if !provider.GrantedClaim(orig, provider.ScopeUsername) || s.Custom.Username == "" {
		return fosite.ErrAccessDenied.WithHintf("No username found in session. Ensure that the %q scope was requested and granted at the authorization endpoint.", provider.ScopeUsername)
	}
	t.Audit.Event(ctx, "Session Found", audit.Fields{SessionID: orig.GetID()})
	if exchanged, ok := r.GetSession().(*sessions.Session); ok {
		// The exchange stores nothing; this names the login's identity provider type in the token
		// endpoint's metrics.
		exchanged.Custom.ProviderType = s.Custom.ProviderType
	}
	now := t.Now().UTC()
	// The session's identity was checked at login and at each refresh; checking it again here
	// covers sessions stored before an operator narrowed the reserved-name exceptions.
	if err := t.RefuseReserved(ctx, s.Custom.ProviderName, idtransform.Identity{Username: s.Custom.Username, Groups: s.Custom.Groups}); err != nil {
		return fosite.ErrAccessDenied.WithHint(err.Error())
	}
	claims := &jwt.IDTokenClaims{
		Issuer:      t.Issuer.URL,
		Subject:     s.Subject,
		Audience:    []string{form.Get("audience")},
		IssuedAt:    now,
		ExpiresAt:   now.Add(provider.IDTokenLifetime),
		AuthTime:    s.Claims.AuthTime,
		RequestedAt: s.Claims.RequestedAt,
		Extra:       map[string]any{provider.AuthorizedPartyClaim: r.GetClient().GetID()},
	}
	if provider.GrantedClaim(orig, provider.ScopeUsername) {
		claims.Extra["username"] = s.Custom.Username
	}
	if provider.GrantedClaim(orig, provider.ScopeGroups) {
		claims.Extra["groups"] = slices.Clone(s.Custom.Groups)
	}
	if len(s.Custom.AdditionalClaims) > 0 {
		claims.Extra[sessions.AdditionalClaimsClaim] = s.Custom.AdditionalClaims
	}
	idToken, err := t.SignIDToken(ctx, claims)
	if err != nil {
		return fosite.ErrServerError.WithWrap(err)
	}
	// As upstream, the response has no expires_in: the token's exp is the only expiry clients read.
	resp.SetAccessToken(idToken)
	resp.SetTokenType("N_A")
	resp.SetExtra("issued_token_type", tokenTypeJWT)
	return nil
}
