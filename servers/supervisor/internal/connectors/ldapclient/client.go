// Package ldapclient is the LDAP client of the ldapidp and activedirectoryidp connectors: it
// finds a user with a service account, checks the password by binding as the user, and reads the
// user's groups; at refresh it re-reads the user by DN and fails when the user is gone or is no
// longer the same person. Hooks adapt this to a directory's conventions (activedirectoryidp uses
// them for Active Directory).
//
// Connections use LDAPS first and StartTLS when LDAPS fails; the protocol that worked is
// remembered and tried first next time. A Provider is safe for concurrent use and opens a
// connection per call.
package ldapclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	goldap "github.com/go-ldap/ldap/v3"
)

// Protocol is how a connection is secured.
type Protocol string

// Protocols in the order they are tried.
const (
	LDAPS    Protocol = "LDAPS"
	StartTLS Protocol = "StartTLS"
)

// noAttributes asks a search for no attributes at all (RFC 4511, 4.5.1.8).
const noAttributes = "1.1"

// DefaultTimeout bounds a call whose context has no deadline.
const DefaultTimeout = 90 * time.Second

// DefaultConnectTimeout bounds connecting when the configuration does not say: a server that
// drops packets is given up on after it, not after the call's whole timeout.
const DefaultConnectTimeout = 10 * time.Second

var (
	// ErrInvalidCredentials is the only failure a user sees for a login: unknown user, wrong
	// or empty password, alike.
	ErrInvalidCredentials = errors.New("invalid credentials")
	// ErrUserNotFound means a refreshed user's entry no longer exists.
	ErrUserNotFound = errors.New("user no longer exists")
	// ErrIdentityChanged means a refreshed user's entry now has another UID or username.
	ErrIdentityChanged = errors.New("user's identity changed")
)

// Identity is an authenticated user.
type Identity struct {
	Username string
	// UID is the raw value of the UID attribute (or the DN), base64url-encoded without
	// padding, so that binary IDs survive (or as Hooks.UID renders it); it becomes the sub
	// of downstream tokens.
	UID    string
	Groups []string
	// DN is the user's entry, re-read at refresh.
	DN string
	// RefreshAttributes are the values of Hooks.RefreshAttributes (the first value of each
	// the entry has), kept from login for Hooks.CheckRefresh; nil without such hooks.
	RefreshAttributes map[string]string
}

// Hooks adapt the generic search-and-bind to a directory's conventions, such as Active
// Directory's group names and account checks. The zero value is plain LDAP.
type Hooks struct {
	// RefreshAttributes are read with the user entry and kept in Identity.RefreshAttributes.
	RefreshAttributes []string
	// CheckRefresh vets the user's entry read at refresh against the identity from login; an
	// error fails the refresh.
	CheckRefresh func(user *goldap.Entry, prev Identity) error
	// UID renders the raw value of the UID attribute; nil base64url-encodes it.
	UID func(raw []byte) (string, error)
	// GroupName names a group from its entry, read with GroupAttributes; nil reads
	// GroupSearch.GroupNameAttribute.
	GroupName       func(group *goldap.Entry) (string, error)
	GroupAttributes []string
}

// Provider authenticates against one LDAP server.
type Provider struct {
	cfg       Config
	hooks     Hooks
	tlsConfig *tls.Config

	mu       sync.Mutex
	protocol Protocol // the last one that worked; empty before the first connection
}

// New checks cfg, fills the spec's defaults and returns a Provider. It does not connect.
func New(cfg Config) (*Provider, error) {
	return NewWithHooks(cfg, Hooks{})
}

// NewWithHooks is New for a directory with conventions of its own.
func NewWithHooks(cfg Config, hooks Hooks) (*Provider, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return newProvider(cfg, hooks), nil
}

func newProvider(cfg Config, hooks Hooks) *Provider {
	tlsConfig := cfg.TLSProfile.LDAPClientConfig()
	if len(cfg.CABundle) > 0 {
		tlsConfig.RootCAs = x509.NewCertPool()
		tlsConfig.RootCAs.AppendCertsFromPEM(cfg.CABundle)
	}
	return &Provider{cfg: cfg, hooks: hooks, tlsConfig: tlsConfig}
}

// RootDSE reads attributes of the server's root DSE (RFC 4512, 5.1) as the service account.
// Only the connection settings of cfg (Host, CABundle, the bind account) are used, so that a
// directory can find its default search bases before the rest of cfg is complete.
func RootDSE(ctx context.Context, cfg Config, attributes ...string) (*goldap.Entry, error) {
	if err := errors.Join(cfg.connectionErrors()...); err != nil {
		return nil, fmt.Errorf("invalid LDAP configuration: %w", err)
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	c, err := newProvider(cfg, Hooks{}).connect(ctx)
	if err != nil {
		return nil, err
	}
	defer c.close()
	if err := c.bindServiceAccount(); err != nil {
		return nil, err
	}
	res, err := c.conn.Search(goldap.NewSearchRequest("", goldap.ScopeBaseObject, goldap.NeverDerefAliases,
		1, 0, false, "(objectClass=*)", attributes, nil))
	if err != nil {
		return nil, fmt.Errorf("reading the root DSE of %q: %w", cfg.Host, err)
	}
	if len(res.Entries) != 1 {
		return nil, fmt.Errorf("reading the root DSE of %q: got %d entries", cfg.Host, len(res.Entries))
	}
	return res.Entries[0], nil
}

// Config returns the configuration with defaults filled in.
func (p *Provider) Config() Config { return p.cfg }

// Protocol returns the protocol of the last successful connection, or "" before one.
func (p *Provider) Protocol() Protocol {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.protocol
}

// Probe connects and binds as the service account, for the LDAPConnectionValid condition.
func (p *Provider) Probe(ctx context.Context) (Protocol, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	c, err := p.connect(ctx)
	if err != nil {
		return "", err
	}
	defer c.close()
	if err := c.bindServiceAccount(); err != nil {
		return "", err
	}
	return c.protocol, nil
}

// Authenticate checks a login name and password. A failure that is the user's doing
// (unknown user, wrong password) is ErrInvalidCredentials and nothing more; other errors
// (server unreachable, misconfigured searches) say what failed.
func (p *Provider) Authenticate(ctx context.Context, username, password string) (*Identity, error) {
	// An empty password would be an unauthenticated bind, which servers accept.
	if username == "" || password == "" {
		return nil, ErrInvalidCredentials
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	c, err := p.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer c.close()
	if err := c.bindServiceAccount(); err != nil {
		return nil, err
	}
	user, err := c.searchUser(username)
	if err != nil {
		return nil, err
	}
	if err := c.conn.Bind(user.DN, password); err != nil {
		if goldap.IsErrorWithCode(err, goldap.LDAPResultInvalidCredentials) {
			return nil, ErrInvalidCredentials
		}
		return nil, fmt.Errorf("binding as user %q: %w", user.DN, err)
	}
	// Groups are read by the service account: users may not see them.
	if err := c.bindServiceAccount(); err != nil {
		return nil, err
	}
	return c.identity(user, nil)
}

// Refresh re-reads a user authenticated earlier. It fails with ErrUserNotFound when the
// entry is gone, with ErrIdentityChanged when its UID or username differ, and with the error
// of Hooks.CheckRefresh; otherwise it returns the identity with groups searched again (or
// kept, with SkipGroupRefresh).
func (p *Provider) Refresh(ctx context.Context, prev Identity) (*Identity, error) {
	if prev.DN == "" {
		return nil, errors.New("refreshing an LDAP user: no DN stored at login")
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	c, err := p.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer c.close()
	if err := c.bindServiceAccount(); err != nil {
		return nil, err
	}
	res, err := c.conn.Search(goldap.NewSearchRequest(prev.DN, goldap.ScopeBaseObject, goldap.NeverDerefAliases,
		1, 0, false, "(objectClass=*)", p.userAttributes(), nil))
	if goldap.IsErrorWithCode(err, goldap.LDAPResultNoSuchObject) || (err == nil && len(res.Entries) == 0) {
		return nil, fmt.Errorf("refreshing %q: %w", prev.DN, ErrUserNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("refreshing %q: reading the user entry: %w", prev.DN, err)
	}
	var keep []string
	if p.cfg.GroupSearch.SkipGroupRefresh {
		keep = slices.Clone(prev.Groups)
		if keep == nil {
			keep = []string{}
		}
	}
	id, err := c.identity(res.Entries[0], keep)
	if err != nil {
		return nil, fmt.Errorf("refreshing %q: %w", prev.DN, err)
	}
	if id.UID != prev.UID {
		return nil, fmt.Errorf("refreshing %q: UID is now %q, was %q: %w", prev.DN, id.UID, prev.UID, ErrIdentityChanged)
	}
	if id.Username != prev.Username {
		return nil, fmt.Errorf("refreshing %q: username is now %q, was %q: %w", prev.DN, id.Username, prev.Username, ErrIdentityChanged)
	}
	// After the identity checks: an account replaced by another is reported as such.
	if p.hooks.CheckRefresh != nil {
		if err := p.hooks.CheckRefresh(res.Entries[0], prev); err != nil {
			return nil, fmt.Errorf("refreshing %q: %w", prev.DN, err)
		}
	}
	return id, nil
}

func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, DefaultTimeout)
}

// session is one connection, closed when the call's context ends.
type session struct {
	p        *Provider
	conn     *goldap.Conn
	protocol Protocol
	stop     func() bool
}

func (s *session) close() {
	s.stop()
	_ = s.conn.Close()
}

// connect tries the remembered protocol first, then the other.
func (p *Provider) connect(ctx context.Context) (*session, error) {
	order := []Protocol{LDAPS, StartTLS}
	if p.Protocol() == StartTLS {
		order = []Protocol{StartTLS, LDAPS}
	}
	var errs []error
	for _, proto := range order {
		s, err := p.dial(ctx, proto)
		if err == nil {
			p.mu.Lock()
			p.protocol = proto
			p.mu.Unlock()
			return s, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", proto, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("connecting to LDAP server %q: %w", p.cfg.Host, errors.Join(errs...))
}

func (p *Provider) dial(ctx context.Context, proto Protocol) (*session, error) {
	port := DefaultLDAPSPort
	if proto == StartTLS {
		port = DefaultStartTLSPort
	}
	addr, err := hostPort(p.cfg.Host, port)
	if err != nil {
		return nil, err
	}
	serverName, _, _ := net.SplitHostPort(addr)
	tlsConfig := p.tlsConfig.Clone()
	tlsConfig.ServerName = serverName

	connectTimeout := p.cfg.ConnectTimeout
	if connectTimeout <= 0 {
		connectTimeout = DefaultConnectTimeout
	}
	connectCtx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(connectCtx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	var conn *goldap.Conn
	if proto == LDAPS {
		tc := tls.Client(raw, tlsConfig)
		if err := tc.HandshakeContext(connectCtx); err != nil {
			_ = raw.Close()
			return nil, err
		}
		conn = goldap.NewConn(tc, true)
	} else {
		conn = goldap.NewConn(raw, false)
	}
	conn.Start()
	if deadline, ok := ctx.Deadline(); ok {
		conn.SetTimeout(time.Until(deadline))
	}
	s := &session{p: p, conn: conn, protocol: proto, stop: context.AfterFunc(ctx, func() { _ = conn.Close() })}
	if proto == StartTLS {
		// go-ldap's StartTLS knows only the connection's timeout, the call's: the connect
		// timeout cuts the connection instead.
		cut := context.AfterFunc(connectCtx, func() { _ = conn.Close() })
		err := conn.StartTLS(tlsConfig)
		if !cut() {
			err = fmt.Errorf("StartTLS: %w", connectCtx.Err())
		}
		if err != nil {
			s.close()
			return nil, err
		}
	}
	return s, nil
}

func (s *session) bindServiceAccount() error {
	if err := s.conn.Bind(s.p.cfg.BindUsername, s.p.cfg.BindPassword); err != nil {
		return fmt.Errorf("binding as the service account %q: %w", s.p.cfg.BindUsername, err)
	}
	return nil
}

// userAttributes are the attributes read from a user entry.
func (p *Provider) userAttributes() []string {
	var attrs []string
	for _, a := range append([]string{p.cfg.UserSearch.UsernameAttribute, p.cfg.UserSearch.UIDAttribute, p.cfg.GroupSearch.UserAttributeForFilter}, p.hooks.RefreshAttributes...) {
		if a != DNAttribute && !slices.Contains(attrs, a) {
			attrs = append(attrs, a)
		}
	}
	if len(attrs) == 0 {
		// No attributes at all, rather than all user attributes.
		attrs = []string{noAttributes}
	}
	return attrs
}

func (s *session) searchUser(username string) (*goldap.Entry, error) {
	us := s.p.cfg.UserSearch
	// A size limit of 2 is enough to tell one match from several.
	res, err := s.conn.Search(goldap.NewSearchRequest(us.Base, goldap.ScopeWholeSubtree, goldap.NeverDerefAliases,
		2, 0, false, substitute(us.Filter, username), s.p.userAttributes(), nil))
	switch {
	case goldap.IsErrorWithCode(err, goldap.LDAPResultSizeLimitExceeded) || (err == nil && len(res.Entries) > 1):
		return nil, fmt.Errorf("searching for user %q below %q: more than one entry matches", username, us.Base)
	case err != nil:
		return nil, fmt.Errorf("searching for user %q below %q: %w", username, us.Base, err)
	case len(res.Entries) == 0:
		return nil, ErrInvalidCredentials
	}
	return res.Entries[0], nil
}

// identity maps a user entry; groups are searched unless given.
func (s *session) identity(user *goldap.Entry, groups []string) (*Identity, error) {
	us := s.p.cfg.UserSearch
	username, err := singleValue(user, us.UsernameAttribute)
	if err != nil {
		return nil, err
	}
	uid, err := singleValue(user, us.UIDAttribute)
	if err != nil {
		return nil, err
	}
	if groups == nil {
		if groups, err = s.searchGroups(user); err != nil {
			return nil, err
		}
	}
	id := &Identity{Username: string(username), UID: base64.RawURLEncoding.EncodeToString(uid), Groups: groups, DN: user.DN}
	if s.p.hooks.UID != nil {
		if id.UID, err = s.p.hooks.UID(uid); err != nil {
			return nil, fmt.Errorf("entry %q: attribute %q: %w", user.DN, us.UIDAttribute, err)
		}
	}
	if len(s.p.hooks.RefreshAttributes) > 0 {
		id.RefreshAttributes = map[string]string{}
		for _, a := range s.p.hooks.RefreshAttributes {
			if values := user.GetRawAttributeValues(a); len(values) > 0 {
				id.RefreshAttributes[a] = string(values[0])
			}
		}
	}
	return id, nil
}

func (s *session) searchGroups(user *goldap.Entry) ([]string, error) {
	gs := s.p.cfg.GroupSearch
	if gs.Base == "" {
		return []string{}, nil
	}
	value, err := singleValue(user, gs.UserAttributeForFilter)
	if err != nil {
		return nil, err
	}
	attrs := []string{gs.GroupNameAttribute}
	switch {
	case s.p.hooks.GroupName != nil && len(s.p.hooks.GroupAttributes) > 0:
		attrs = s.p.hooks.GroupAttributes
	case s.p.hooks.GroupName != nil || gs.GroupNameAttribute == DNAttribute:
		attrs = []string{noAttributes}
	}
	res, err := s.conn.SearchWithPaging(goldap.NewSearchRequest(gs.Base, goldap.ScopeWholeSubtree, goldap.NeverDerefAliases,
		0, 0, false, substitute(gs.Filter, string(value)), attrs, nil), 500)
	if err != nil {
		return nil, fmt.Errorf("searching the groups of %q below %q: %w", user.DN, gs.Base, err)
	}
	groups := make([]string, 0, len(res.Entries))
	for _, g := range res.Entries {
		name, err := s.groupName(g)
		if err != nil {
			return nil, fmt.Errorf("group %w", err)
		}
		groups = append(groups, name)
	}
	slices.Sort(groups)
	return slices.Compact(groups), nil
}

func (s *session) groupName(g *goldap.Entry) (string, error) {
	if s.p.hooks.GroupName != nil {
		return s.p.hooks.GroupName(g)
	}
	name, err := singleValue(g, s.p.cfg.GroupSearch.GroupNameAttribute)
	return string(name), err
}

// singleValue returns the DN for "dn", else the one value of the attribute (matched by its
// exact name).
func singleValue(e *goldap.Entry, attr string) ([]byte, error) {
	if attr == DNAttribute {
		return []byte(e.DN), nil
	}
	values := e.GetRawAttributeValues(attr)
	if len(values) != 1 || len(values[0]) == 0 {
		return nil, fmt.Errorf("entry %q has %d values of attribute %q, want exactly one non-empty value", e.DN, len(values), attr)
	}
	return values[0], nil
}
