// Package ldapidp is the connector of LDAPIdentityProviders: users log in with a username and
// password (from the CLI or on the Supervisor's login form) that ldapclient checks at the LDAP
// server, and are re-read at each refresh. Its Connector also serves activedirectoryidp, which is
// LDAP with Active Directory's defaults.
package ldapidp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/ldapclient"
	"sealion.dev/servers/supervisor/internal/issuer"
)

// Flows of an LDAPIdentityProvider: the CLI's password flow first, and the login form.
func Flows(*idpv1alpha1.LDAPIdentityProvider) []issuer.Flow { return connectors.PasswordFlows }

// Open checks an LDAPIdentityProvider with its bind Secret and CA bundle, and connects to the
// server as the service account, unless it did so successfully for the same inputs less than
// connectors.ProbeTTL ago. A server that cannot be reached keeps the connector of the last
// successful probe of the same inputs (see connectors.Factory).
func Open(ctx context.Context, idp *idpv1alpha1.LDAPIdentityProvider, in connectors.Inputs) (connectors.Connector, []metav1.Condition, error) {
	return open(ctx, idp, in, (*ldapclient.Provider).Probe)
}

// probed is a probe: the Provider to connect with (it remembers the protocol that worked) and its
// LDAPConnectionValid condition. After a failure that only the server's absence caused, provider
// is the last one that connected, else nil.
type probed struct {
	provider *ldapclient.Provider
	cond     metav1.Condition
}

// open is Open with the probe as a parameter, for tests.
func open(ctx context.Context, idp *idpv1alpha1.LDAPIdentityProvider, in connectors.Inputs,
	probe func(*ldapclient.Provider, context.Context) (ldapclient.Protocol, error),
) (connectors.Connector, []metav1.Condition, error) {
	secret, err := in.Secret(idp.Spec.Bind.SecretName)
	if err != nil {
		return nil, nil, err
	}
	caBundle, tlsErr := in.CABundle("spec.tls", idp.Spec.TLS)
	p, conds := Prepare(idp.Spec, idp.Generation, secret, caBundle, tlsErr, in.Settings)
	if p == nil {
		return nil, conds, nil
	}
	r := connectors.Probe(in.Probes, connectors.Fingerprint(idp.Generation, secret, caBundle), func(prev probed, found bool) (probed, bool) {
		_, err := probe(p, ctx)
		r := probed{p, ConnectionCondition(p, secret, idp.Generation, err)}
		if err != nil {
			r.provider = nil
			if found && connectors.Unreachable(err) {
				// The last provider that connected, or, when that was in an earlier process,
				// this one: same inputs.
				r.provider = cmp.Or(prev.provider, p)
			}
		}
		return r, err == nil
	})
	conds = append(conds, r.cond)
	if r.provider == nil {
		return nil, conds, nil
	}
	return NewConnector(r.provider, issuer.TypeLDAP), conds, nil
}

// ConfigFromSpec builds the client's configuration from a spec, the CA bundle its spec.tls
// resolves to, and the username and password of its bind Secret.
func ConfigFromSpec(spec idpv1alpha1.LDAPIdentityProviderSpec, caBundle []byte, bindUsername, bindPassword string) ldapclient.Config {
	return ldapclient.Config{
		Host:         spec.Host,
		CABundle:     caBundle,
		BindUsername: bindUsername,
		BindPassword: bindPassword,
		UserSearch: ldapclient.UserSearch{
			Base:              spec.UserSearch.Base,
			Filter:            spec.UserSearch.Filter,
			UsernameAttribute: spec.UserSearch.Attributes.Username,
			UIDAttribute:      spec.UserSearch.Attributes.UID,
		},
		GroupSearch: ldapclient.GroupSearch{
			Base:                   spec.GroupSearch.Base,
			Filter:                 spec.GroupSearch.Filter,
			UserAttributeForFilter: spec.GroupSearch.UserAttributeForFilter,
			GroupNameAttribute:     spec.GroupSearch.Attributes.GroupName,
			SkipGroupRefresh:       spec.GroupSearch.SkipGroupRefresh,
		},
	}
}

// Connector logs users in at one LDAP server or Active Directory domain with their password, and
// re-reads them at refresh.
type Connector struct {
	provider *ldapclient.Provider
	// typ names the server in refusals: ldap or activedirectory.
	typ issuer.IdentityProviderType
}

var (
	_ connectors.PasswordConnector = (*Connector)(nil)
	_ connectors.RefreshConnector  = (*Connector)(nil)
)

// NewConnector is the connector of provider, for identity providers of type typ.
func NewConnector(provider *ldapclient.Provider, typ issuer.IdentityProviderType) *Connector {
	return &Connector{provider: provider, typ: typ}
}

// Authenticate checks a username and password. Only a wrong username or password is the user's
// doing, a connectors.Error, and a server that cannot be reached, an Unavailable one; other
// failures are the server's or the configuration's.
func (c *Connector) Authenticate(ctx context.Context, login connectors.Login, username, password string) (*connectors.Identity, error) {
	id, err := c.provider.Authenticate(ctx, username, password)
	if errors.Is(err, ldapclient.ErrInvalidCredentials) {
		return nil, connectors.Refused("Username/password not accepted by LDAP provider.", nil)
	}
	if connectors.Unreachable(err) {
		return nil, connectors.Unavailable(err)
	}
	if err != nil {
		return nil, err
	}
	cfg := c.provider.Config()
	return &connectors.Identity{
		Subject:  Subject(cfg.Host, cfg.UserSearch.Base, login.IDPName, id.UID),
		Username: id.Username,
		Groups:   id.Groups,
		Session:  connectors.Session{LDAP: &connectors.LDAPSession{UserDN: id.DN, UID: id.UID, ExtraRefreshAttributes: id.RefreshAttributes}},
	}, nil
}

// Refresh re-reads the user, which fails when the account was deleted, changed, disabled or
// locked, and returns the user's groups now. A server that cannot be reached refuses no one: the
// error is Unavailable.
func (c *Connector) Refresh(ctx context.Context, _ connectors.Login, prev connectors.Identity) (*connectors.Identity, error) {
	s := prev.Session.LDAP
	if s == nil || s.UserDN == "" {
		return nil, connectors.Refused("the session holds no LDAP user", nil)
	}
	id, err := c.provider.Refresh(ctx, ldapclient.Identity{
		Username: prev.Username, UID: s.UID, Groups: prev.Groups, DN: s.UserDN, RefreshAttributes: s.ExtraRefreshAttributes,
	})
	if connectors.Unreachable(err) {
		return nil, connectors.Unavailable(err)
	}
	if err != nil {
		return nil, connectors.Refused(fmt.Sprintf("the %s server no longer accepts the user", c.typ), err)
	}
	now := prev
	now.Username, now.Groups = id.Username, id.Groups
	return &now, nil
}

// Subject is the downstream sub of an LDAP or Active Directory user:
// ldaps://<host>?base=<user search base>&idpName=<display name>&sub=<uid>.
func Subject(host, base, idpName, uid string) string {
	u := url.URL{Scheme: "ldaps", Host: host, RawQuery: url.Values{"base": {base}, "idpName": {idpName}, "sub": {uid}}.Encode()}
	return u.String()
}
