package oauth

import (
	"errors"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"sealion.dev/servers/supervisor/internal/issuer"
)

// reports records the upstreams the endpoints reported unreachable.
type reports struct {
	mu   sync.Mutex
	seen []string
}

func (r *reports) hear(ups *fakeUpstreams, typ issuer.IdentityProviderType) {
	ups.OnUnreachable(typ, func(ns, name string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.seen = append(r.seen, string(typ)+" "+ns+"/"+name)
	})
}

func (r *reports) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// TestUpstreamOutage: while the upstream cannot be reached, refreshes and password logins answer
// temporarily_unavailable naming the identity provider, report the outage for the controller to
// probe, and keep every session; once the upstream is back, the same refresh token works.
func TestUpstreamOutage(t *testing.T) {
	type outage struct {
		h       *harness
		idpName string
		reports *reports
		// login returns a refresh token; setDown makes the upstream unreachable or back.
		login   func(t *testing.T) string
		setDown func(bool)
		// password tries a password login during the outage, for upstreams that take one.
		password func() (errorCode, description string)
	}
	setups := map[string]func(t *testing.T) outage{
		"LDAP": func(t *testing.T) outage {
			ups, r := &fakeUpstreams{}, &reports{}
			r.hear(ups, issuer.TypeLDAP)
			dir := newFakeDirectory()
			ups.add(issuer.TypeLDAP, "corp-ldap", dir)
			h := newHarnessWith(t, ups, ldapIDP(issuer.TypeLDAP))
			return outage{h: h, idpName: ldapIDPName, reports: r,
				login: func(t *testing.T) string {
					l := newLogin()
					_, loc := h.passwordAuthorize(l, ldapIDPName, "pinny", "pinny-password")
					tok, err := h.cli().Exchange(h.clientContext(), loc.Query().Get("code"), oauth2.VerifierOption(l.verifier))
					if err != nil {
						t.Fatal(err)
					}
					return tok.RefreshToken
				},
				setDown: func(down bool) { dir.update(func(map[string]*directoryUser) { dir.down = down }) },
				password: func() (string, string) {
					_, loc := h.passwordAuthorize(newLogin(), ldapIDPName, "pinny", "pinny-password")
					return loc.Query().Get("error"), loc.Query().Get("error_description")
				},
			}
		},
		"OIDC": func(t *testing.T) outage {
			ups, r := &fakeUpstreams{}, &reports{}
			r.hear(ups, issuer.TypeOIDC)
			h := newHarnessWith(t, ups, issuer.IdentityProvider{
				DisplayName: idpName, Type: issuer.TypeOIDC, Flows: []issuer.Flow{issuer.FlowBrowserAuthcode},
				Kind: "OIDCIdentityProvider", Name: "upstream-idp", UID: "idp-uid",
			})
			return outage{h: h, idpName: idpName, reports: r,
				login: func(t *testing.T) string {
					l := h.login()
					tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
					if err != nil {
						t.Fatal(err)
					}
					return tok.RefreshToken
				},
				setDown: func(down bool) {
					h.upstream.mu.Lock()
					defer h.upstream.mu.Unlock()
					h.upstream.down = down
				},
			}
		},
	}
	for name, setup := range setups {
		t.Run(name, func(t *testing.T) {
			o := setup(t)
			h := o.h
			refreshToken := o.login(t)
			stored := h.storedTypes()
			wantHint := "The identity provider '" + o.idpName + "' is unreachable; try again later."

			o.setDown(true)
			_, err := h.cli().TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: refreshToken}).Token()
			var re *oauth2.RetrieveError
			if !errors.As(err, &re) || re.ErrorCode != "temporarily_unavailable" || !strings.Contains(re.ErrorDescription, wantHint) ||
				re.Response.StatusCode >= http.StatusInternalServerError && re.Response.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("refresh during the outage: %v; want temporarily_unavailable with %q", err, wantHint)
			}
			if strings.Contains(err.Error(), "connection refused") {
				t.Errorf("the answer leaks the upstream's error: %v", err)
			}
			if o.password != nil {
				if code, desc := o.password(); code != "temporarily_unavailable" || !strings.HasSuffix(desc, wantHint) {
					t.Errorf("password login during the outage: %s %q; want temporarily_unavailable with %q", code, desc, wantHint)
				}
			}
			if got := h.storedTypes(); !maps.Equal(got, stored) {
				t.Errorf("during the outage the stored records went from %v to %v", stored, got)
			}
			if o.reports.count() == 0 {
				t.Error("the outage was not reported to the registry")
			}
			for _, seen := range o.reports.seen {
				if !strings.HasSuffix(seen, " "+namespace+"/"+map[string]string{ldapIDPName: "corp-ldap", idpName: "upstream-idp"}[o.idpName]) {
					t.Errorf("reported %q, want the identity provider object", seen)
				}
			}

			o.setDown(false)
			if _, err := h.cli().TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: refreshToken}).Token(); err != nil {
				t.Errorf("refresh once the upstream is back: %v", err)
			}
		})
	}
}
