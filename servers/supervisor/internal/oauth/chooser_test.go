package oauth

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
)

var chooserLink = regexp.MustCompile(`<a href="([^"]*)" data-type="([^"]*)">([^<]*)</a>`)

func TestChooseIdentityProvider(t *testing.T) {
	ups := &fakeUpstreams{}
	ups.add(issuer.TypeLDAP, "corp-ldap", newFakeDirectory())
	h := newHarnessWith(t, ups, ldapIDP(issuer.TypeLDAP), issuer.IdentityProvider{
		DisplayName: idpName, Type: issuer.TypeOIDC, Flows: []issuer.Flow{issuer.FlowBrowserAuthcode},
		Kind: "OIDCIdentityProvider", Name: "upstream-idp", UID: "idp-uid",
	})

	l := newLogin()
	resp, page := h.get(h.cli().AuthCodeURL(l.state, oauth2.S256ChallengeOption(l.verifier)))
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/fd"+provider.ChooseIdentityProviderPath {
		t.Fatalf("authorize without pinniped_idp_name led to %s %s; want the chooser", resp.Status, resp.Request.URL)
	}
	links := chooserLink.FindAllStringSubmatch(page, -1)
	if len(links) != 2 || links[0][3] != ldapIDPName || links[0][2] != "ldap" || links[1][3] != idpName || links[1][2] != "oidc" {
		t.Fatalf("chooser links %v; want both identity providers:\n%s", links, page)
	}

	// Each link is the original request naming its identity provider.
	oidcLink, err := url.Parse(html.UnescapeString(links[1][1]))
	if err != nil {
		t.Fatal(err)
	}
	if q := oidcLink.Query(); q.Get("pinniped_idp_name") != idpName || q.Get("state") != l.state || q.Get("client_id") != provider.PinnipedCLIClientID {
		t.Errorf("the OIDC link's query %v lost the original request", q)
	}
	loc, resp := h.authorize(h.server.URL + oidcLink.String())
	if loc == nil || loc.Query().Get("code") == "" || loc.Query().Get("state") != l.state {
		t.Errorf("following the OIDC link ended with %s at %v; want the CLI with a code", resp.Status, loc)
	}
	ldapLink, _ := url.Parse(html.UnescapeString(links[0][1]))
	if resp, _ := h.get(h.server.URL + ldapLink.String()); resp.Request.URL.Path != "/fd"+provider.LoginPath {
		t.Errorf("the LDAP link led to %s; want the login form", resp.Request.URL)
	}

	// A request fosite refuses gets no chooser.
	if resp, page := h.get(h.issuerURL + provider.ChooseIdentityProviderPath + "?client_id=someone-else"); resp.StatusCode < 400 || strings.Contains(page, "<a href") {
		t.Errorf("chooser for an invalid request: %s\n%s", resp.Status, page)
	}
}
