package ldapclient

import (
	"time"

	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	goldap "github.com/go-ldap/ldap/v3"

	"sealion.dev/servers/internal/tlsprofile"
)

// DNAttribute names the entry's distinguished name where an attribute name is expected.
const DNAttribute = "dn"

// placeholder is replaced in search filters by the escaped login name or group member value.
const placeholder = "{}"

// Default ports when Host has none.
const (
	DefaultLDAPSPort    = "636"
	DefaultStartTLSPort = "389"
)

// Config is an LDAP server and how to find users and groups in it: an LDAPIdentityProvider
// spec (or an ActiveDirectoryIdentityProvider's) with its bind Secret and CA bundle resolved.
type Config struct {
	// Host is host[:port] of the server. Without a port, LDAPS uses 636 and StartTLS 389;
	// with one, both are tried on it.
	Host string
	// CABundle is PEM CA certificates that verify the server; empty trusts the system roots.
	CABundle []byte
	// TLSProfile sets the TLS 1.2 ciphers offered (tls.onedottwo.allowedCiphers narrows them);
	// the zero Profile offers all of them.
	TLSProfile tlsprofile.Profile
	// ConnectTimeout bounds connecting to the server, its TLS handshake (LDAPS or StartTLS)
	// included; DefaultConnectTimeout when zero.
	ConnectTimeout time.Duration
	// BindUsername (a DN) and BindPassword are the service account that searches.
	BindUsername string
	BindPassword string
	UserSearch   UserSearch
	GroupSearch  GroupSearch
}

// UserSearch mirrors spec.userSearch.
type UserSearch struct {
	Base string
	// Filter selects the user; "{}" is replaced by the escaped login name. Empty means
	// "<UsernameAttribute>={}". Outer parentheses are optional.
	Filter string
	// UsernameAttribute and UIDAttribute name the attributes (case-sensitive, or "dn") that
	// give the username and the stable unique ID.
	UsernameAttribute string
	UIDAttribute      string
}

// GroupSearch mirrors spec.groupSearch.
type GroupSearch struct {
	// Base is where groups are searched; empty means users have no groups.
	Base string
	// Filter selects the user's groups; "{}" is replaced by the escaped value of the user's
	// UserAttributeForFilter. Empty means "member={}".
	Filter string
	// UserAttributeForFilter is the user attribute put into Filter; empty means "dn".
	UserAttributeForFilter string
	// GroupNameAttribute is the group attribute that names a group; empty means "dn".
	GroupNameAttribute string
	// SkipGroupRefresh keeps the groups found at login instead of searching at refresh.
	SkipGroupRefresh bool
}

// withDefaults fills the defaults of the spec and normalizes both filters to be
// parenthesized, then checks what is left.
func (c Config) withDefaults() (Config, error) {
	if c.UserSearch.Filter == "" && c.UserSearch.UsernameAttribute != "" && c.UserSearch.UsernameAttribute != DNAttribute {
		c.UserSearch.Filter = c.UserSearch.UsernameAttribute + "=" + placeholder
	}
	if c.GroupSearch.Filter == "" {
		c.GroupSearch.Filter = "member=" + placeholder
	}
	if c.GroupSearch.UserAttributeForFilter == "" {
		c.GroupSearch.UserAttributeForFilter = DNAttribute
	}
	if c.GroupSearch.GroupNameAttribute == "" {
		c.GroupSearch.GroupNameAttribute = DNAttribute
	}
	c.UserSearch.Filter = parenthesize(c.UserSearch.Filter)
	c.GroupSearch.Filter = parenthesize(c.GroupSearch.Filter)
	return c, c.validate()
}

func (c Config) validate() error {
	errs := c.connectionErrors()
	if c.UserSearch.Base == "" {
		errs = append(errs, errors.New("userSearch.base is required"))
	}
	if c.UserSearch.UsernameAttribute == "" {
		errs = append(errs, errors.New("userSearch.attributes.username is required"))
	}
	if c.UserSearch.UIDAttribute == "" {
		errs = append(errs, errors.New("userSearch.attributes.uid is required"))
	}
	switch {
	case c.UserSearch.Filter == "":
		errs = append(errs, errors.New(`userSearch.filter is required when userSearch.attributes.username is "dn"`))
	case !strings.Contains(c.UserSearch.Filter, placeholder):
		errs = append(errs, fmt.Errorf("userSearch.filter %q must contain %s", c.UserSearch.Filter, placeholder))
	default:
		if _, err := goldap.CompileFilter(substitute(c.UserSearch.Filter, "x")); err != nil {
			errs = append(errs, fmt.Errorf("userSearch.filter %q: %w", c.UserSearch.Filter, err))
		}
	}
	if c.GroupSearch.Base != "" {
		if _, err := goldap.CompileFilter(substitute(c.GroupSearch.Filter, "x")); err != nil {
			errs = append(errs, fmt.Errorf("groupSearch.filter %q: %w", c.GroupSearch.Filter, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid LDAP configuration: %w", err)
	}
	return nil
}

// connectionErrors checks what connecting and binding need: Host, CABundle and the bind account.
func (c Config) connectionErrors() []error {
	var errs []error
	if c.Host == "" {
		errs = append(errs, errors.New("host is required"))
	} else if _, err := hostPort(c.Host, DefaultLDAPSPort); err != nil {
		errs = append(errs, err)
	}
	if len(c.CABundle) > 0 && !x509.NewCertPool().AppendCertsFromPEM(c.CABundle) {
		errs = append(errs, errors.New("CA bundle holds no PEM certificate"))
	}
	if c.BindUsername == "" || c.BindPassword == "" {
		errs = append(errs, errors.New("bind username and password are required"))
	}
	return errs
}

func parenthesize(filter string) string {
	if filter == "" || strings.HasPrefix(filter, "(") {
		return filter
	}
	return "(" + filter + ")"
}

// substitute puts value, escaped for a filter, in place of every "{}".
func substitute(filter, value string) string {
	return strings.ReplaceAll(filter, placeholder, goldap.EscapeFilter(value))
}

// hostPort adds defaultPort to a host without one.
func hostPort(host, defaultPort string) (string, error) {
	h, p, err := net.SplitHostPort(host)
	if err != nil {
		// No port (or a bare IPv6 address): the whole string is the host.
		h, p = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), defaultPort
		if strings.Contains(h, ":") && net.ParseIP(h) == nil {
			return "", fmt.Errorf("host %q is not host[:port]", host)
		}
	}
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 || h == "" || strings.ContainsAny(h, "/[]@?#") {
		return "", fmt.Errorf("host %q is not host[:port]", host)
	}
	return net.JoinHostPort(h, p), nil
}
