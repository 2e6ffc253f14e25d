package oidcprovider

import (
	"context"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
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
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
)

// Secret layout of stored OAuth state.
const (
	// TypeLabel says which kind of state a Secret holds.
	TypeLabel = "storage.pinniped.dev/type"
	// RequestIDLabel groups the Secrets of one login, so that rotation can revoke them together.
	RequestIDLabel = "storage.pinniped.dev/request-id"
	// GarbageCollectAfterAnnotation is when a garbage collector may delete the Secret (RFC 3339).
	GarbageCollectAfterAnnotation = "storage.pinniped.dev/garbage-collect-after"
	// DataKey holds the JSON record, VersionKey its format version.
	DataKey    = "pinniped-storage-data"
	VersionKey = "pinniped-storage-version"
	// storageVersion is this package's record format (not Pinniped's: records are not shared).
	storageVersion = "1"
)

// Kinds of stored state, with how long each is kept.
const (
	typeAuthcode     = "authcode"
	typeAccessToken  = "access-token"
	typeRefreshToken = "refresh-token"
	typePKCE         = "pkce"
	typeOIDC         = "oidc"
)

var storageLifetimes = map[string]time.Duration{
	typeAuthcode:     AuthorizeCodeLifetime + SessionLifetime,
	typeAccessToken:  SessionLifetime + AccessTokenLifetime,
	typeRefreshToken: SessionLifetime + AccessTokenLifetime,
	typePKCE:         AuthorizeCodeLifetime + time.Minute,
	typeOIDC:         AuthorizeCodeLifetime + time.Minute,
}

// SecretType is the type of the Secrets holding state of kind t.
func SecretType(t string) corev1.SecretType { return corev1.SecretType("storage.pinniped.dev/" + t) }

// SecretName is the name of the Secret holding state of kind t for a token signature.
func SecretName(t, signature string) string {
	return "pinniped-storage-" + t + "-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte(signature)))
}

// Storage keeps fosite's requests in Secrets of one namespace.
type Storage struct {
	secrets corev1client.SecretInterface
	now     func() time.Time
	// revoker revokes the upstream tokens of the logins that are dropped; New sets it.
	revoker upstreamRevoker
}

// NewStorage stores OAuth state with secrets (the Supervisor's namespace).
func NewStorage(secrets corev1client.SecretInterface) *Storage {
	return &Storage{secrets: secrets, now: time.Now}
}

// record is the stored form of a fosite request; the client is stored by ID.
type record struct {
	ID                string          `json:"id"`
	RequestedAt       time.Time       `json:"requestedAt"`
	ClientID          string          `json:"clientID"`
	RequestedScope    []string        `json:"requestedScope"`
	GrantedScope      []string        `json:"grantedScope"`
	RequestedAudience []string        `json:"requestedAudience"`
	GrantedAudience   []string        `json:"grantedAudience"`
	Form              url.Values      `json:"form"`
	Session           json.RawMessage `json:"session"`
	// Active is false once an authorization code was used.
	Active bool `json:"active"`
}

// store is the fosite storage of one issuer. Its clients are pinniped-cli and, when
// oidcClients is set, the Ready OIDCClients.
type store struct {
	*Storage
	cli         fosite.Client
	oidcClients *OIDCClients
}

var (
	_ fosite.Storage                     = (*store)(nil)
	_ oauth2.CoreStorage                 = (*store)(nil)
	_ oauth2.TokenRevocationStorage      = (*store)(nil)
	_ openid.OpenIDConnectRequestStorage = (*store)(nil)
	_ pkce.PKCERequestStorage            = (*store)(nil)
)

func (s *Storage) forClients(oidcClients *OIDCClients) *store {
	return &store{Storage: s, cli: pinnipedCLI(), oidcClients: oidcClients}
}

// GetClient finds a client at every use, so that a stored request is refused once its
// OIDCClient was deleted or became unusable.
func (s *store) GetClient(_ context.Context, id string) (fosite.Client, error) {
	switch {
	case id == PinnipedCLIClientID:
		return s.cli, nil
	case strings.HasPrefix(id, configv1alpha1.OIDCClientNamePrefix) && s.oidcClients != nil:
		return s.oidcClients.client(id)
	}
	return nil, fosite.ErrNotFound.WithHintf("unknown client %q", id)
}

// ClientAssertionJWTValid and SetClientAssertionJWT belong to private_key_jwt client
// authentication, which no client of the Supervisor uses.
func (s *store) ClientAssertionJWTValid(context.Context, string) error {
	return fosite.ErrInvalidClient.WithHint("client assertions are not supported")
}

func (s *store) SetClientAssertionJWT(context.Context, string, time.Time) error {
	return fosite.ErrInvalidClient.WithHint("client assertions are not supported")
}

func (s *store) create(ctx context.Context, kind, signature string, req fosite.Requester) error {
	sess, err := json.Marshal(req.GetSession())
	if err != nil {
		return fmt.Errorf("encoding %s session: %w", kind, err)
	}
	data, err := json.Marshal(record{
		ID:                req.GetID(),
		RequestedAt:       req.GetRequestedAt(),
		ClientID:          req.GetClient().GetID(),
		RequestedScope:    req.GetRequestedScopes(),
		GrantedScope:      req.GetGrantedScopes(),
		RequestedAudience: req.GetRequestedAudience(),
		GrantedAudience:   req.GetGrantedAudience(),
		Form:              req.GetRequestForm(),
		Session:           sess,
		Active:            true,
	})
	if err != nil {
		return fmt.Errorf("encoding %s: %w", kind, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:        SecretName(kind, signature),
			Labels:      map[string]string{TypeLabel: kind, RequestIDLabel: req.GetID()},
			Annotations: map[string]string{GarbageCollectAfterAnnotation: s.now().Add(storageLifetimes[kind]).UTC().Format(time.RFC3339)},
		},
		Type: SecretType(kind),
		Data: map[string][]byte{DataKey: data, VersionKey: []byte(storageVersion)},
	}
	if _, err := s.secrets.Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("storing %s: %w", kind, err)
	}
	return nil
}

// get reads a stored request, decoding its session into session (a *Session).
func (s *store) get(ctx context.Context, kind, signature string, session fosite.Session) (*fosite.Request, *record, *corev1.Secret, error) {
	secret, err := s.secrets.Get(ctx, SecretName(kind, signature), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, nil, fosite.ErrNotFound.WithWrap(err)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading %s: %w", kind, err)
	}
	if secret.Type != SecretType(kind) || string(secret.Data[VersionKey]) != storageVersion {
		return nil, nil, nil, fosite.ErrNotFound.WithHintf("stored %s has an unknown type or version", kind)
	}
	if after, err := time.Parse(time.RFC3339, secret.Annotations[GarbageCollectAfterAnnotation]); err == nil && s.now().After(after) {
		return nil, nil, nil, fosite.ErrNotFound.WithHintf("stored %s has expired", kind)
	}
	var rec record
	if err := json.Unmarshal(secret.Data[DataKey], &rec); err != nil {
		return nil, nil, nil, fmt.Errorf("decoding %s: %w", kind, err)
	}
	if session == nil {
		session = newSession()
	}
	if err := json.Unmarshal(rec.Session, session); err != nil {
		return nil, nil, nil, fmt.Errorf("decoding %s session: %w", kind, err)
	}
	client, err := s.GetClient(ctx, rec.ClientID)
	if err != nil {
		return nil, nil, nil, err
	}
	return &fosite.Request{
		ID:                rec.ID,
		RequestedAt:       rec.RequestedAt,
		Client:            client,
		RequestedScope:    rec.RequestedScope,
		GrantedScope:      rec.GrantedScope,
		RequestedAudience: rec.RequestedAudience,
		GrantedAudience:   rec.GrantedAudience,
		Form:              rec.Form,
		Session:           session,
	}, &rec, secret, nil
}

func (s *store) delete(ctx context.Context, kind, signature string) error {
	err := s.secrets.Delete(ctx, SecretName(kind, signature), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s: %w", kind, err)
	}
	return nil
}

// deleteRequest deletes the state of kind kind that belongs to the login requestID.
func (s *store) deleteRequest(ctx context.Context, kind, requestID string) error {
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

func (s *store) CreateAuthorizeCodeSession(ctx context.Context, signature string, req fosite.Requester) error {
	return s.create(ctx, typeAuthcode, signature, req)
}

// GetAuthorizeCodeSession returns the request with fosite.ErrInvalidatedAuthorizeCode once the
// code was used, so that fosite revokes the tokens issued for it.
func (s *store) GetAuthorizeCodeSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	req, rec, _, err := s.get(ctx, typeAuthcode, signature, session)
	if err != nil {
		return nil, err
	}
	if !rec.Active {
		return req, fosite.ErrInvalidatedAuthorizeCode
	}
	return req, nil
}

func (s *store) InvalidateAuthorizeCodeSession(ctx context.Context, signature string) error {
	_, rec, secret, err := s.get(ctx, typeAuthcode, signature, nil)
	if err != nil {
		return err
	}
	rec.Active = false
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encoding authcode: %w", err)
	}
	secret.Data[DataKey] = data
	// The update carries the resourceVersion read above, so two concurrent redemptions of the
	// same code cannot both succeed.
	if _, err := s.secrets.Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("invalidating authcode: %w", err)
	}
	return nil
}

func (s *store) CreateAccessTokenSession(ctx context.Context, signature string, req fosite.Requester) error {
	return s.create(ctx, typeAccessToken, signature, req)
}

func (s *store) GetAccessTokenSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	req, _, _, err := s.get(ctx, typeAccessToken, signature, session)
	if err != nil {
		return nil, err
	}
	return req, nil
}

func (s *store) DeleteAccessTokenSession(ctx context.Context, signature string) error {
	return s.delete(ctx, typeAccessToken, signature)
}

func (s *store) CreateRefreshTokenSession(ctx context.Context, signature, _ string, req fosite.Requester) error {
	return s.create(ctx, typeRefreshToken, signature, req)
}

func (s *store) GetRefreshTokenSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	req, _, _, err := s.get(ctx, typeRefreshToken, signature, session)
	if err != nil {
		return nil, err
	}
	return req, nil
}

func (s *store) DeleteRefreshTokenSession(ctx context.Context, signature string) error {
	return s.delete(ctx, typeRefreshToken, signature)
}

// RotateRefreshToken deletes the refresh and access tokens of the login before new ones are
// stored: a refresh token works once. The login goes on, so its upstream tokens stay.
func (s *store) RotateRefreshToken(ctx context.Context, requestID, _ string) error {
	return errors.Join(s.deleteRequest(ctx, typeRefreshToken, requestID), s.deleteRequest(ctx, typeAccessToken, requestID))
}

// RevokeRefreshToken and RevokeAccessToken end a login (fosite calls them when an authorization
// code is replayed): its upstream tokens are revoked too.
func (s *store) RevokeRefreshToken(ctx context.Context, requestID string) error {
	return s.revokeRequest(ctx, typeRefreshToken, requestID)
}

func (s *store) RevokeAccessToken(ctx context.Context, requestID string) error {
	return s.revokeRequest(ctx, typeAccessToken, requestID)
}

func (s *store) CreatePKCERequestSession(ctx context.Context, signature string, req fosite.Requester) error {
	return s.create(ctx, typePKCE, signature, req)
}

func (s *store) GetPKCERequestSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	req, _, _, err := s.get(ctx, typePKCE, signature, session)
	if err != nil {
		return nil, err
	}
	return req, nil
}

func (s *store) DeletePKCERequestSession(ctx context.Context, signature string) error {
	return s.delete(ctx, typePKCE, signature)
}

func (s *store) CreateOpenIDConnectSession(ctx context.Context, signature string, req fosite.Requester) error {
	return s.create(ctx, typeOIDC, signature, req)
}

func (s *store) GetOpenIDConnectSession(ctx context.Context, signature string, req fosite.Requester) (fosite.Requester, error) {
	stored, _, _, err := s.get(ctx, typeOIDC, signature, req.GetSession())
	if err != nil {
		return nil, err
	}
	return stored, nil
}

func (s *store) DeleteOpenIDConnectSession(ctx context.Context, signature string) error {
	return s.delete(ctx, typeOIDC, signature)
}

// nullStore drops what the authorize endpoint's validation would store.
type nullStore struct{ *store }

func (nullStore) CreateAuthorizeCodeSession(context.Context, string, fosite.Requester) error {
	return nil
}

func (nullStore) CreatePKCERequestSession(context.Context, string, fosite.Requester) error {
	return nil
}

func (nullStore) CreateOpenIDConnectSession(context.Context, string, fosite.Requester) error {
	return nil
}
