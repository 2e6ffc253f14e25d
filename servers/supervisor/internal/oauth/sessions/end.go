package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"sealion.dev/servers/supervisor/internal/tokenseal"
)

// EndedSession is a login EndSessions ended.
type EndedSession struct {
	// RequestID is the login's session ID, as the audit log names it.
	RequestID string
	// Username is the login's downstream username.
	Username string
}

// loginKinds are the kinds of record that carry a login on: those an administrator's revocation
// looks through. PKCE and OpenID Connect records belong to a login's code, and go with it.
var loginKinds = []string{typeAuthcode, typeAccessToken, typeRefreshToken}

// EndSessions ends every stored login whose session match accepts: the upstream tokens of each are
// revoked and all its records deleted (revokeRecords). It lists the records a page at a time, as
// the garbage collector does, so that its memory does not grow with the organisation, and ends
// gcParallelDeletes logins at once. Records it cannot read are left to the garbage collector. It
// returns the logins it ended, also when it failed part way: the caller records those, and the
// rest are found again at its retry.
func (s *Storage) EndSessions(ctx context.Context, match func(*Session) bool) ([]EndedSession, error) {
	select {
	case <-s.keys.Ready(): // revoking upstream tokens opens them
	default:
		return nil, tokenseal.ErrNotReady
	}
	var (
		mu    sync.Mutex
		ended []EndedSession
		errs  []error
	)
	seen := map[string]bool{}
	opts := metav1.ListOptions{LabelSelector: TypeLabel + " in (" + strings.Join(loginKinds, ",") + ")", Limit: gcPageSize}
	for {
		list, err := s.secrets.List(ctx, opts)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing the stored sessions: %w", err))
			break
		}
		var g errgroup.Group
		g.SetLimit(gcParallelDeletes)
		for i := range list.Items {
			secret := &list.Items[i]
			rec, err := decodeRecord(secret.Labels[TypeLabel], secret)
			if err != nil || seen[rec.Request.ID] {
				continue
			}
			// Matching needs the identity only: the sealed upstream tokens stay sealed.
			sess := NewSession()
			if json.Unmarshal(rec.Request.Session, sess) != nil || !match(sess) {
				continue
			}
			seen[rec.Request.ID] = true
			g.Go(func() error {
				err := s.revokeRecords(ctx, labels.Set{RequestIDLabel: rec.Request.ID}.String())
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				} else {
					ended = append(ended, EndedSession{RequestID: rec.Request.ID, Username: sess.Custom.Username})
				}
				return nil
			})
		}
		_ = g.Wait()
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	return ended, errors.Join(errs...)
}

// EndLogin ends the stored logins of loginKey (LoginKey) that are subject's at the client
// clientID, as EndSessions ends them, and returns their request IDs. Logins already ended are no
// error: their records are gone. Logins stored before LoginLabel was written are not found.
func (s *Storage) EndLogin(ctx context.Context, loginKey, clientID, subject string) ([]string, error) {
	list, err := s.secrets.List(ctx, metav1.ListOptions{LabelSelector: labels.Set{LoginLabel: loginKey}.String()})
	if err != nil {
		return nil, fmt.Errorf("listing the records of login %s: %w", loginKey, err)
	}
	var ended []string
	for _, secret := range list.Items {
		rec, err := decodeRecord(secret.Labels[TypeLabel], &secret)
		if err != nil || rec.Request.Client.ID != clientID || slices.Contains(ended, rec.Request.ID) {
			continue
		}
		sess := NewSession()
		if json.Unmarshal(rec.Request.Session, sess) != nil || sess.Subject != subject {
			continue
		}
		// Every record of the login: its PKCE and OpenID Connect ones carry no LoginLabel.
		if err := s.revokeRecords(ctx, labels.Set{RequestIDLabel: rec.Request.ID}.String()); err != nil {
			return ended, err
		}
		ended = append(ended, rec.Request.ID)
	}
	return ended, nil
}
