// Package sessions keeps the Supervisor's OAuth state in Kubernetes Secrets of its namespace, as
// Pinniped keeps it, so that operators' tooling sees the same objects and a rolling migration
// from Pinniped works both ways: fosite's authorization codes, access and refresh tokens, PKCE and
// OpenID Connect requests, each with the Session of its login, in Secrets named
// pinniped-storage-<kind>-<lower-case base32 of the signature's bytes>, of type
// storage.pinniped.dev/<kind>, labelled storage.pinniped.dev/type, with Pinniped's
// pinniped-storage-version "1" and its JSON record of version "8". Any replica can continue a
// login from them. A login that ends (its records expire or fosite revokes it) has its upstream
// tokens revoked by its connector, and the garbage collector deletes every expired Secret that
// asks for it with the garbage-collect-after annotation, as Pinniped's does.
//
// Deliberate differences from Pinniped's records, each still read by Pinniped:
//   - Upstream tokens are sealed (tokenseal), bound to their login, so that a copy of the Secrets
//     (a backup, etcd without encryption at rest) holds no usable upstream credential. Tokens
//     Pinniped stored in clear are read as they are. A Pinniped replica reads our sealed value
//     as the token itself: its upstream refresh of such a session fails and the user logs in again.
//   - The stored client is its ID and public settings, never its secret hashes; it is looked up
//     again at each use, so a deleted client's tokens stop working.
//   - Refresh token records carry "active", and a rotated one stays, inactive and emptied, until
//     it expires: its reuse is recognized and ends the login (Pinniped deletes it at rotation).
//   - The session adds the downstream groups, the identity provider's display name
//     (providerDisplayName; providerName is the object's name, as Pinniped's), the login time
//     and the additional claims; it has no warnings.
//   - Every record is labelled with its login's request ID (Pinniped labels access and refresh
//     tokens only), so that one login's records are found together, and authorization codes,
//     access and refresh tokens also with LoginLabel, so that an ID token finds its login.
//
// Device authorizations (RFC 8628) are one more kind, ours alone (device.go).
//
// Revocation lives here, with the storage, because both of its callers do: fosite's revocation
// of a replayed code and the garbage collector, which share the retry bookkeeping kept in the
// Secrets' annotations.
package sessions

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/handler/openid"
	"github.com/ory/fosite/handler/pkce"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/cache"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"

	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/supervisor/internal/sessionpolicy"
	"sealion.dev/servers/supervisor/internal/tokenseal"
)

// Secret layout of stored OAuth state.
const (
	// TypeLabel says which kind of state a Secret holds.
	TypeLabel = "storage.pinniped.dev/type"
	// RequestIDLabel groups the Secrets of one login, so that rotation can revoke them together.
	RequestIDLabel = "storage.pinniped.dev/request-id"
	// LoginLabel, ours, names the login of an authorization code, access or refresh token by what
	// its ID tokens say of it (LoginKey): the end-session endpoint finds the login of an ID token
	// by it, since the ID tokens carry Pinniped's claims and no session ID.
	LoginLabel = "storage.sealion.dev/login"
	// GarbageCollectAfterAnnotation is when a garbage collector may delete the Secret (RFC 3339).
	GarbageCollectAfterAnnotation = "storage.pinniped.dev/garbage-collect-after"
	// DataKey holds the JSON record, VersionKey the version of the Secret's layout.
	DataKey    = "pinniped-storage-data"
	VersionKey = "pinniped-storage-version"
	// storageVersion is Pinniped's version of the Secret's layout, recordVersion that of the JSON
	// record in it (its "version" field), the same for every kind: records are shared with
	// Pinniped Supervisors, which read ours and whose we read, during a rolling migration.
	storageVersion = "1"
	recordVersion  = "8"
)

// Lifetimes of the stored state; neither is configurable. Sessions' are (sessionpolicy).
const (
	AuthorizeCodeLifetime = 10 * time.Minute
	AccessTokenLifetime   = 2 * time.Minute
)

// Kinds of stored state, with how long each is kept.
const (
	typeAuthcode     = "authcode"
	typeAccessToken  = "access-token"
	typeRefreshToken = "refresh-token"
	typePKCE         = "pkce"
	typeOIDC         = "oidc"
)

// NotSessionsSelector selects every object but the sessions' records (Secrets of the kinds above,
// by their type label), the other Secrets of the namespace included: OIDC clients' secrets, keys,
// certificates.
var NotSessionsSelector = TypeLabel + " notin (" + strings.Join(kinds, ",") + ")"

// kinds are the kinds of stored state.
var kinds = []string{typeAuthcode, typeAccessToken, typeRefreshToken, typePKCE, typeOIDC, typeDevice}

var storageLifetimes = map[string]time.Duration{
	typePKCE: AuthorizeCodeLifetime + time.Minute,
	typeOIDC: AuthorizeCodeLifetime + time.Minute,
	// A device authorization's is counted from its expiry, not from its creation.
	typeDevice: AuthorizeCodeLifetime,
}

// garbageCollectAfter is when the record of kind for req may be deleted. Authorization codes,
// access and refresh tokens are kept past the end of their session (the refresh token expiry the
// token endpoint set from the session policy): by an access token's lifetime, and a code by its
// own, so that a rotated refresh token or a redeemed code is still recognized if replayed, and
// revokes the login. With the default policy these are Pinniped's lifetimes.
func (s *Store) garbageCollectAfter(kind string, req fosite.Requester) time.Time {
	if lifetime, ok := storageLifetimes[kind]; ok {
		return s.now().Add(lifetime)
	}
	end := req.GetSession().GetExpiresAt(fosite.RefreshToken)
	if end.IsZero() { // a session without a policy's end: the longest any can have
		end = s.now().Add(sessionpolicy.Longest)
	}
	if kind == typeAuthcode {
		return end.Add(AuthorizeCodeLifetime)
	}
	return end.Add(AccessTokenLifetime)
}

// MaxRecordLifetime is the longest a record is kept: an authorization code's of a session as
// long as the session policy allows.
const MaxRecordLifetime = AuthorizeCodeLifetime + sessionpolicy.Longest

// SecretType is the type of the Secrets holding state of kind t.
func SecretType(t string) corev1.SecretType { return corev1.SecretType("storage.pinniped.dev/" + t) }

// SecretName is the name of the Secret holding state of kind t for a token signature, as
// Pinniped names it: the signature's bytes (fosite's signatures are base64; any other string is
// taken as it is) in lower-case unpadded base32, a valid name whatever the signature holds.
func SecretName(t, signature string) string {
	return "pinniped-storage-" + t + "-" + nameOf(signature)
}

// nameOf is a signature's bytes in lower-case unpadded base32: only letters and digits, valid in
// a name and as a label value.
func nameOf(signature string) string {
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(signatureBytes(signature)))
}

// signatureBytes decodes a base64 signature in the first of the encodings that accepts it, in
// the order Pinniped tries them, so that both name a signature's Secret alike.
func signatureBytes(signature string) []byte {
	for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.StdEncoding} {
		if b, err := enc.DecodeString(signature); err == nil {
			return b
		}
	}
	return []byte(signature)
}

// Storage keeps fosite's requests in Secrets of one namespace.
type Storage struct {
	secrets corev1client.SecretInterface
	now     func() time.Time
	// connectors revoke the upstream tokens of the logins that end.
	connectors Connectors
	// keys seal the upstream tokens of stored sessions.
	keys *tokenseal.Ring
	// audit receives an event for each record the garbage collector deletes.
	audit *audit.Logger
	// accessTokens holds the access token Secrets WatchAccessTokens saw issued, by name.
	accessTokens *cache.LRUExpireCache
}

// NewStorage stores OAuth state with secrets (the Supervisor's namespace), sealing upstream
// tokens with keys, and revokes the upstream tokens of the logins that end with the connectors
// of their identity providers.
func NewStorage(secrets corev1client.SecretInterface, connectors Connectors, keys *tokenseal.Ring) *Storage {
	s := &Storage{secrets: secrets, now: time.Now, connectors: connectors, keys: keys}
	s.accessTokens = s.newAccessTokenCache()
	return s
}

// WithAudit has the garbage collector write Pinniped's "Session Garbage Collected" events to log.
func (s *Storage) WithAudit(log *audit.Logger) *Storage {
	s.audit = log
	return s
}

// record is the stored form of a fosite request, in Pinniped's JSON.
type record struct {
	// Active is false once an authorization code or a refresh token was used. Pinniped writes it
	// for authorization codes only, and deletes rotated refresh tokens: a record without it is
	// active.
	Active  *bool         `json:"active,omitempty"`
	Request storedRequest `json:"request"`
	Version string        `json:"version"`
}

func (r *record) active() bool { return r.Active == nil || *r.Active }

// storedRequest is fosite's Request as Pinniped stores it (fosite.Request's JSON names).
type storedRequest struct {
	ID             string       `json:"id"`
	RequestedAt    time.Time    `json:"requestedAt"`
	Client         storedClient `json:"client"`
	RequestedScope []string     `json:"scopes"`
	GrantedScope   []string     `json:"grantedScopes"`
	Form           url.Values   `json:"form"`
	// Session is a *Session, in Pinniped's JSON (see Session.MarshalJSON).
	Session           json.RawMessage `json:"session"`
	RequestedAudience []string        `json:"requestedAudience"`
	GrantedAudience   []string        `json:"grantedAudience"`
}

// storedClient is the client of a stored request, with fosite's JSON names. Only its ID is read:
// the client is looked up again at every use. Unlike Pinniped, no secret hash is stored.
type storedClient struct {
	ID            string   `json:"id"`
	RedirectURIs  []string `json:"redirect_uris"`
	GrantTypes    []string `json:"grant_types"`
	ResponseTypes []string `json:"response_types"`
	Scopes        []string `json:"scopes"`
	Audience      []string `json:"audience"`
	Public        bool     `json:"public"`
}

func newStoredClient(c fosite.Client) storedClient {
	return storedClient{
		ID: c.GetID(), RedirectURIs: c.GetRedirectURIs(), GrantTypes: c.GetGrantTypes(), ResponseTypes: c.GetResponseTypes(),
		Scopes: c.GetScopes(), Audience: c.GetAudience(), Public: c.IsPublic(),
	}
}

// Store is the fosite storage of one issuer: the stored state of Storage and the clients of
// the issuer.
type Store struct {
	*Storage
	fosite.ClientManager
}

var (
	_ fosite.Storage                     = (*Store)(nil)
	_ oauth2.CoreStorage                 = (*Store)(nil)
	_ oauth2.TokenRevocationStorage      = (*Store)(nil)
	_ openid.OpenIDConnectRequestStorage = (*Store)(nil)
	_ pkce.PKCERequestStorage            = (*Store)(nil)
)

// ForClients is the fosite storage of an issuer whose clients clients finds. Stored requests
// name their client by ID, and it is looked up again at every use, so that a stored request is
// refused once its client was deleted or became unusable.
func (s *Storage) ForClients(clients fosite.ClientManager) *Store {
	return &Store{Storage: s, ClientManager: clients}
}

func (s *Store) create(ctx context.Context, kind, signature string, req fosite.Requester) error {
	sess, err := s.encodeSession(req)
	if err != nil {
		return fmt.Errorf("encoding %s session: %w", kind, err)
	}
	rec := record{Version: recordVersion, Request: storedRequest{
		ID:                req.GetID(),
		RequestedAt:       req.GetRequestedAt(),
		Client:            newStoredClient(req.GetClient()),
		RequestedScope:    req.GetRequestedScopes(),
		GrantedScope:      req.GetGrantedScopes(),
		Form:              req.GetRequestForm(),
		Session:           sess,
		RequestedAudience: req.GetRequestedAudience(),
		GrantedAudience:   req.GetGrantedAudience(),
	}}
	if kind == typeAuthcode || kind == typeRefreshToken {
		rec.Active = ptr.To(true)
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", kind, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:        SecretName(kind, signature),
			Labels:      recordLabels(kind, req),
			Annotations: map[string]string{GarbageCollectAfterAnnotation: s.garbageCollectAfter(kind, req).UTC().Format(time.RFC3339)},
		},
		Type: SecretType(kind),
		Data: map[string][]byte{DataKey: data, VersionKey: []byte(storageVersion)},
	}
	if _, err := s.secrets.Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("storing %s: %w", kind, err)
	}
	return nil
}

// recordLabels are the labels of the record of kind for req: its kind, its login's request ID and,
// for the kinds that carry a login on, the login's LoginKey.
func recordLabels(kind string, req fosite.Requester) map[string]string {
	l := map[string]string{TypeLabel: kind, RequestIDLabel: req.GetID()}
	if sess, ok := req.GetSession().(*Session); ok && slices.Contains(loginKinds, kind) && sess.Claims != nil && sess.Subject != "" {
		l[LoginLabel] = LoginKey(sess.Subject, req.GetClient().GetID(), sess.Claims.RequestedAt.Unix())
	}
	return l
}

// LoginKey names the login of subject at the client clientID that started at loginTime (Unix
// seconds): the sub, azp and rat claims of its ID tokens, which a refresh keeps. It is a hash, in
// lower-case unpadded base32, a valid label value whatever the subject holds. Two logins of one
// user at one client in the same second share it.
func LoginKey(subject, clientID string, loginTime int64) string {
	sum := sha256.Sum256([]byte(subject + "\x00" + clientID + "\x00" + strconv.FormatInt(loginTime, 10)))
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:]))
}

// get reads a stored request, decoding its session into session (a *Session), from etcd (a
// quorum read) unless cached: then from the access tokens WatchAccessTokens keeps, else from the
// API server's watch cache, and from etcd only when neither has seen it yet (it was written a
// moment ago).
func (s *Store) get(ctx context.Context, kind, signature string, session fosite.Session, cached bool) (*fosite.Request, *record, *corev1.Secret, error) {
	name := SecretName(kind, signature)
	var secret *corev1.Secret
	var err error
	var found bool
	if cached {
		if secret, found = s.cachedAccessToken(name); !found {
			secret, err = s.secrets.Get(ctx, name, metav1.GetOptions{ResourceVersion: "0"})
		}
	}
	if !found && (!cached || apierrors.IsNotFound(err)) {
		secret, err = s.secrets.Get(ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, nil, nil, fosite.ErrNotFound.WithWrap(err)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading %s: %w", kind, err)
	}
	if after, err := time.Parse(time.RFC3339, secret.Annotations[GarbageCollectAfterAnnotation]); err == nil && s.now().After(after) {
		return nil, nil, nil, fosite.ErrNotFound.WithHintf("stored %s has expired", kind)
	}
	rec, err := decodeRecord(kind, secret)
	if errors.Is(err, errUnknownFormat) {
		return nil, nil, nil, fosite.ErrNotFound.WithHintf("stored %s has an unknown type or version", kind).WithWrap(err)
	} else if err != nil {
		return nil, nil, nil, err
	}
	if session == nil {
		session = NewSession()
	}
	if err := s.decodeSession(rec.Request.Session, rec.Request.ID, session); errors.Is(err, tokenseal.ErrCannotOpen) {
		// Its key was retired or the record changed: the login cannot go on upstream.
		return nil, nil, nil, fosite.ErrNotFound.WithHintf("stored %s holds an upstream token that cannot be opened", kind).WithWrap(err)
	} else if err != nil {
		return nil, nil, nil, fmt.Errorf("decoding %s session: %w", kind, err)
	}
	client, err := s.GetClient(ctx, rec.Request.Client.ID)
	if err != nil {
		return nil, nil, nil, err
	}
	return &fosite.Request{
		ID:                rec.Request.ID,
		RequestedAt:       rec.Request.RequestedAt,
		Client:            client,
		RequestedScope:    rec.Request.RequestedScope,
		GrantedScope:      rec.Request.GrantedScope,
		RequestedAudience: rec.Request.RequestedAudience,
		GrantedAudience:   rec.Request.GrantedAudience,
		Form:              rec.Request.Form,
		Session:           session,
	}, rec, secret, nil
}

// errUnknownFormat is the error of a Secret that holds no record of its kind in the format
// Pinniped and this package share.
var errUnknownFormat = errors.New("not a stored record of this version")

// decodeRecord reads the record of kind that secret holds, checking it as Pinniped does: the
// Secret's type and type label, the layout version and the record's version.
func decodeRecord(kind string, secret *corev1.Secret) (*record, error) {
	if secret.Type != SecretType(kind) || secret.Labels[TypeLabel] != kind || string(secret.Data[VersionKey]) != storageVersion {
		return nil, fmt.Errorf("%s %s: %w", kind, secret.Name, errUnknownFormat)
	}
	var rec record
	if err := json.Unmarshal(secret.Data[DataKey], &rec); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", kind, err)
	}
	if rec.Version != recordVersion || rec.Request.ID == "" {
		return nil, fmt.Errorf("%s %s has version %q: %w", kind, secret.Name, rec.Version, errUnknownFormat)
	}
	return &rec, nil
}

// encodeSession is the stored JSON of req's session, its upstream tokens sealed to the login.
func (s *Storage) encodeSession(req fosite.Requester) (json.RawMessage, error) {
	sess := req.GetSession()
	if ours, ok := sess.(*Session); ok {
		sealed := ours.Clone().(*Session)
		for _, token := range sealed.Custom.Tokens() {
			var err error
			if *token, err = s.keys.Seal(*token, req.GetID()); err != nil {
				return nil, err
			}
		}
		sess = sealed
	}
	return json.Marshal(sess)
}

// decodeSession decodes a stored session into session and opens its upstream tokens, sealed to
// the login requestID.
func (s *Storage) decodeSession(stored json.RawMessage, requestID string, session fosite.Session) error {
	if err := json.Unmarshal(stored, session); err != nil {
		return err
	}
	ours, ok := session.(*Session)
	if !ok {
		return nil
	}
	for _, token := range ours.Custom.Tokens() {
		var err error
		if *token, err = s.keys.Open(*token, requestID); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) delete(ctx context.Context, kind, signature string) error {
	err := s.secrets.Delete(ctx, SecretName(kind, signature), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s: %w", kind, err)
	}
	return nil
}

// deleteRequest deletes the state of kind kind that belongs to the login requestID.
func (s *Store) deleteRequest(ctx context.Context, kind, requestID string) error {
	selector := labels.Set{TypeLabel: kind, RequestIDLabel: requestID}.String()
	list, err := s.secrets.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("listing %s of request %s: %w", kind, requestID, err)
	}
	var errs []error
	for _, secret := range list.Items {
		if err := s.secrets.Delete(ctx, secret.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *Store) CreateAuthorizeCodeSession(ctx context.Context, signature string, req fosite.Requester) error {
	return s.create(ctx, typeAuthcode, signature, req)
}

// GetAuthorizeCodeSession returns the request with fosite.ErrInvalidatedAuthorizeCode once the
// code was used, so that fosite revokes the tokens issued for it.
func (s *Store) GetAuthorizeCodeSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	req, rec, _, err := s.get(ctx, typeAuthcode, signature, session, false)
	if err != nil {
		return nil, err
	}
	if !rec.active() {
		return req, fosite.ErrInvalidatedAuthorizeCode
	}
	return req, nil
}

// ErrAlreadyUsed is the error of the losers of concurrent uses of one authorization code or
// refresh token: exactly one use deactivates it.
var ErrAlreadyUsed = errors.New("already used by a concurrent request")

// InvalidateAuthorizeCodeSession deactivates a code once, atomically: a code that another
// request deactivated since fosite read it, or concurrently with this call, gives ErrAlreadyUsed,
// and that request fails.
func (s *Store) InvalidateAuthorizeCodeSession(ctx context.Context, signature string) error {
	_, rec, secret, err := s.get(ctx, typeAuthcode, signature, nil, false)
	if err != nil {
		return err
	}
	return s.deactivate(ctx, secret, rec, false)
}

// deactivate marks a stored code or refresh token used. The update carries the resourceVersion
// of the read that found it active, so of two concurrent uses exactly one passes: the other
// finds it inactive, or its update conflicts. strip drops what a used record no longer needs
// (the session, which may hold upstream tokens, and the request form).
func (s *Store) deactivate(ctx context.Context, secret *corev1.Secret, rec *record, strip bool) error {
	kind := secret.Labels[TypeLabel]
	if !rec.active() {
		return fmt.Errorf("%s: %w", kind, ErrAlreadyUsed)
	}
	rec.Active = ptr.To(false)
	if strip {
		rec.Request.Session, rec.Request.Form = json.RawMessage("{}"), nil
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", kind, err)
	}
	secret = secret.DeepCopy()
	secret.Data[DataKey] = data
	_, err = s.secrets.Update(ctx, secret, metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err):
		return fmt.Errorf("%s: %w", kind, ErrAlreadyUsed)
	case err != nil:
		return fmt.Errorf("deactivating %s: %w", kind, err)
	}
	return nil
}

func (s *Store) CreateAccessTokenSession(ctx context.Context, signature string, req fosite.Requester) error {
	return s.create(ctx, typeAccessToken, signature, req)
}

// GetAccessTokenSession reads the tokens WatchAccessTokens keeps, then the API server's watch
// cache: the token exchange, the Supervisor's busiest endpoint, reads an access token at each
// call, and a quorum read costs etcd and the API server several times what a cached one does. It
// is safe because an access token's record is never changed, only deleted (by revocation or
// expiry): a deleted token stays readable for as long as a watch lags behind etcd, milliseconds,
// the lag every informer-based authorizer accepts.
func (s *Store) GetAccessTokenSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	req, _, _, err := s.get(ctx, typeAccessToken, signature, session, true)
	if err != nil {
		return nil, err
	}
	return req, nil
}

func (s *Store) DeleteAccessTokenSession(ctx context.Context, signature string) error {
	return s.delete(ctx, typeAccessToken, signature)
}

func (s *Store) CreateRefreshTokenSession(ctx context.Context, signature, _ string, req fosite.Requester) error {
	return s.create(ctx, typeRefreshToken, signature, req)
}

// GetRefreshTokenSession returns the request with fosite.ErrInactiveToken for a refresh token
// that was already rotated: fosite then revokes the whole login (RFC 6819 5.2.2.3), since
// either the client or a thief holds a copy that should no longer exist.
func (s *Store) GetRefreshTokenSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	req, rec, _, err := s.get(ctx, typeRefreshToken, signature, session, false)
	if err != nil {
		return nil, err
	}
	if !rec.active() {
		return req, fosite.ErrInactiveToken
	}
	return req, nil
}

func (s *Store) DeleteRefreshTokenSession(ctx context.Context, signature string) error {
	return s.delete(ctx, typeRefreshToken, signature)
}

// RotateRefreshToken retires the refresh token just used and deletes the login's access tokens
// before new ones are stored: a refresh token works once. The used token stays, inactive and
// without its session, so that its reuse is recognized (GetRefreshTokenSession); the one retired
// at the previous rotation is deleted, so that a login keeps at most one. Of concurrent uses of
// one refresh token exactly one gets here first: the others fail with
// fosite.ErrSerializationFailure. The login goes on, so its upstream tokens stay.
func (s *Store) RotateRefreshToken(ctx context.Context, requestID, signature string) error {
	selector := labels.Set{TypeLabel: typeRefreshToken, RequestIDLabel: requestID}.String()
	list, err := s.secrets.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("listing refresh tokens of request %s: %w", requestID, err)
	}
	used := SecretName(typeRefreshToken, signature)
	var errs []error
	for i := range list.Items {
		secret := &list.Items[i]
		if secret.Name != used {
			if err := s.secrets.Delete(ctx, secret.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		rec, err := decodeRecord(typeRefreshToken, secret)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := s.deactivate(ctx, secret, rec, true); errors.Is(err, ErrAlreadyUsed) {
			return fosite.ErrSerializationFailure.WithWrap(err)
		} else if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, s.deleteRequest(ctx, typeAccessToken, requestID))...)
}

// RevokeRefreshToken and RevokeAccessToken end a login (fosite calls them when an authorization
// code is replayed): its upstream tokens are revoked too.
func (s *Store) RevokeRefreshToken(ctx context.Context, requestID string) error {
	return s.revokeRequest(ctx, typeRefreshToken, requestID)
}

func (s *Store) RevokeAccessToken(ctx context.Context, requestID string) error {
	return s.revokeRequest(ctx, typeAccessToken, requestID)
}

func (s *Store) CreatePKCERequestSession(ctx context.Context, signature string, req fosite.Requester) error {
	return s.create(ctx, typePKCE, signature, req)
}

func (s *Store) GetPKCERequestSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	req, _, _, err := s.get(ctx, typePKCE, signature, session, false)
	if err != nil {
		return nil, err
	}
	return req, nil
}

func (s *Store) DeletePKCERequestSession(ctx context.Context, signature string) error {
	return s.delete(ctx, typePKCE, signature)
}

func (s *Store) CreateOpenIDConnectSession(ctx context.Context, signature string, req fosite.Requester) error {
	return s.create(ctx, typeOIDC, signature, req)
}

func (s *Store) GetOpenIDConnectSession(ctx context.Context, signature string, req fosite.Requester) (fosite.Requester, error) {
	stored, _, _, err := s.get(ctx, typeOIDC, signature, req.GetSession(), false)
	if err != nil {
		return nil, err
	}
	return stored, nil
}

func (s *Store) DeleteOpenIDConnectSession(ctx context.Context, signature string) error {
	return s.delete(ctx, typeOIDC, signature)
}
