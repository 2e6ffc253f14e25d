// Package tlsprofile holds the TLS settings every listener of the Concierge and the Supervisor
// serves with: TLS 1.2 or later, TLS 1.2 with forward-secret AEAD ciphers only, a list that the
// configuration key tls.onedottwo.allowedCiphers narrows as Pinniped's does. TLS 1.3's ciphers
// are Go's and not configurable. The Supervisor's connections to LDAP servers use the same
// profile, with some CBC ciphers more.
package tlsprofile

import (
	"crypto/tls"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// defaultCiphers are the TLS 1.2 ciphers the servers offer unless narrowed.
var defaultCiphers = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// ldapCiphers are offered, after the default ones, only to LDAP servers, as Pinniped's LDAP
// profile does (the default of AWS's Active Directory needs them); no listener of ours offers
// them. They are accepted in the allowed list for that reason.
var ldapCiphers = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
	tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
	tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
}

// aliases are the names Go's constants gave the CHACHA20 ciphers before their IANA names.
var aliases = map[string]uint16{
	"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305":   tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// http2Ciphers are those of which HTTP/2 over TLS 1.2 requires one (RFC 7540 section 9.2.2);
// Go's HTTP/2 server refuses to start without.
var http2Ciphers = []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}

// Profile is the TLS 1.2 cipher list of every listener of one server, and that of its
// connections to LDAP servers. The zero Profile offers every default cipher.
type Profile struct {
	// narrowed is the list New made; nil means the defaults.
	narrowed []uint16
	// ldapNarrowed is the LDAP list New made; nil means the defaults and ldapCiphers.
	ldapNarrowed []uint16
}

func (p Profile) ciphers() []uint16 {
	if p.narrowed == nil {
		return defaultCiphers
	}
	return p.narrowed
}

// New narrows the default ciphers to allowed, the value of tls.onedottwo.allowedCiphers; an
// empty list narrows nothing. A name outside the accepted set is an error naming it, as is a list
// that leaves the listeners no TLS 1.2 cipher.
func New(allowed []string) (Profile, error) {
	if len(allowed) == 0 {
		return Profile{}, nil
	}
	accepted := map[string]uint16{}
	for _, id := range slices.Concat(defaultCiphers, ldapCiphers) {
		accepted[tls.CipherSuiteName(id)] = id
	}
	var unknown []string
	ids := map[uint16]bool{}
	for _, name := range allowed {
		id, ok := accepted[name]
		if !ok {
			id, ok = aliases[name]
		}
		if !ok {
			unknown = append(unknown, name)
			continue
		}
		ids[id] = true
	}
	if len(unknown) > 0 {
		return Profile{}, fmt.Errorf("unrecognized ciphers [%s], ciphers must be from list [%s]",
			strings.Join(unknown, ", "), strings.Join(acceptedNames(), ", "))
	}
	notAllowed := func(id uint16) bool { return !ids[id] }
	p := Profile{
		narrowed:     slices.DeleteFunc(slices.Clone(defaultCiphers), notAllowed),
		ldapNarrowed: slices.DeleteFunc(slices.Concat(defaultCiphers, ldapCiphers), notAllowed),
	}
	if len(p.narrowed) == 0 {
		return Profile{}, fmt.Errorf("none of the allowed ciphers is one the servers offer for TLS 1.2 (%s)", strings.Join(names(defaultCiphers), ", "))
	}
	return p, nil
}

// acceptedNames lists every name New accepts, aliases last.
func acceptedNames() []string {
	aliasNames := slices.Sorted(maps.Keys(aliases))
	return slices.Concat(names(slices.Concat(defaultCiphers, ldapCiphers)), aliasNames)
}

func names(ids []uint16) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = tls.CipherSuiteName(id)
	}
	return out
}

// CipherNames are the TLS 1.2 ciphers by name, as k8s.io/apiserver's serving options take them.
func (p Profile) CipherNames() []string { return names(p.ciphers()) }

// HTTP2 reports whether the ciphers allow HTTP/2: without one of those it requires, a client
// offering only TLS 1.2 could not use it, and Go's HTTP/2 server refuses to start.
func (p Profile) HTTP2() bool {
	return slices.ContainsFunc(p.ciphers(), func(id uint16) bool { return slices.Contains(http2Ciphers, id) })
}

// Protocols are the HTTP versions a net/http server serves, which also sets the ALPN protocols
// it offers: HTTP/1.1, and HTTP/2 where the ciphers allow it.
func (p Profile) Protocols() *http.Protocols {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(p.HTTP2())
	return &protocols
}

// ServerConfig is a net/http server's TLS configuration, to which the caller adds its
// certificates; set the server's Protocols too.
func (p Profile) ServerConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, CipherSuites: slices.Clone(p.ciphers())}
}

// LDAPClientConfig is the TLS configuration of a connection to an LDAP server, to which the
// caller adds its roots: the listeners' ciphers and ldapCiphers, both as narrowed by New.
func (p Profile) LDAPClientConfig() *tls.Config {
	ciphers := p.ldapNarrowed
	if ciphers == nil {
		ciphers = slices.Concat(defaultCiphers, ldapCiphers)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, CipherSuites: slices.Clone(ciphers)}
}

// Config is the tls key of the Concierge's and the Supervisor's configuration files.
type Config struct {
	// OneDotTwo configures TLS 1.2; TLS 1.3's ciphers are Go's and not configurable.
	OneDotTwo OneDotTwo `json:"onedottwo"`
}

// OneDotTwo configures TLS 1.2.
type OneDotTwo struct {
	// AllowedCiphers narrows the ciphers offered; see New.
	AllowedCiphers []string `json:"allowedCiphers,omitempty"`
}
