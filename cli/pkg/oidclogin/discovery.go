package oidclogin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
)

// ErrUntrustedCertificate is wrapped by errors caused by an issuer whose TLS certificate does not
// chain to a trusted CA: the caller should be given the issuer's CA bundle.
var ErrUntrustedCertificate = errors.New("the issuer's TLS certificate is not signed by a trusted certificate authority")

// supervisorDiscoveryKey is the discovery document member by which a Pinniped Supervisor says
// where its identity providers are listed.
const supervisorDiscoveryKey = "discovery.supervisor.pinniped.dev/v1alpha1"

// Discovery is what an issuer's OpenID Connect discovery document says.
type Discovery struct {
	Issuer                string
	AuthorizationEndpoint string
	TokenEndpoint         string
	// DeviceAuthorizationEndpoint is RFC 8628's endpoint, empty when the issuer offers none.
	DeviceAuthorizationEndpoint string
	// RevocationEndpoint is RFC 7009's endpoint, empty when the issuer offers none.
	RevocationEndpoint     string
	ScopesSupported        []string
	ResponseModesSupported []string
	// IdentityProvidersEndpoint lists a Pinniped Supervisor's upstream identity providers; it is
	// empty for other issuers.
	IdentityProvidersEndpoint string

	provider *oidc.Provider
}

// IsSupervisor reports whether the issuer is a Pinniped Supervisor.
func (d *Discovery) IsSupervisor() bool { return d.IdentityProvidersEndpoint != "" }

// SupportsFormPost reports whether the issuer can POST the authorization response to the
// redirect URI (response_mode=form_post).
func (d *Discovery) SupportsFormPost() bool {
	return slices.Contains(d.ResponseModesSupported, "form_post")
}

// Discover fetches and checks the discovery document of issuer, an https URL, with client.
func Discover(ctx context.Context, client *http.Client, issuer string) (*Discovery, error) {
	if err := requireHTTPS(issuer, "the issuer"); err != nil {
		return nil, err
	}
	provider, err := oidc.NewProvider(oidc.ClientContext(ctx, client), issuer)
	if err != nil {
		return nil, explainRequestError(fmt.Sprintf("OIDC discovery at %s", issuer), err)
	}
	var doc struct {
		ScopesSupported        []string `json:"scopes_supported"`
		ResponseModesSupported []string `json:"response_modes_supported"`
		RevocationEndpoint     string   `json:"revocation_endpoint"`
		Supervisor             struct {
			IdentityProvidersEndpoint string `json:"pinniped_identity_providers_endpoint"`
		} `json:"discovery.supervisor.pinniped.dev/v1alpha1"`
	}
	if err := provider.Claims(&doc); err != nil {
		return nil, fmt.Errorf("decoding the discovery document of %s: %w", issuer, err)
	}
	d := &Discovery{
		Issuer:                      issuer,
		AuthorizationEndpoint:       provider.Endpoint().AuthURL,
		TokenEndpoint:               provider.Endpoint().TokenURL,
		DeviceAuthorizationEndpoint: provider.Endpoint().DeviceAuthURL,
		RevocationEndpoint:          doc.RevocationEndpoint,
		ScopesSupported:             doc.ScopesSupported,
		ResponseModesSupported:      doc.ResponseModesSupported,
		IdentityProvidersEndpoint:   doc.Supervisor.IdentityProvidersEndpoint,
		provider:                    provider,
	}
	// The endpoints receive codes, passwords and tokens.
	if err := requireHTTPS(d.AuthorizationEndpoint, "the issuer's authorization endpoint"); err != nil {
		return nil, err
	}
	if err := requireHTTPS(d.TokenEndpoint, "the issuer's token endpoint"); err != nil {
		return nil, err
	}
	if d.RevocationEndpoint != "" {
		if err := requireHTTPS(d.RevocationEndpoint, "the issuer's revocation endpoint"); err != nil {
			return nil, err
		}
	}
	if d.DeviceAuthorizationEndpoint != "" {
		if err := requireHTTPS(d.DeviceAuthorizationEndpoint, "the issuer's device authorization endpoint"); err != nil {
			return nil, err
		}
	}
	if d.IsSupervisor() && !strings.HasPrefix(d.IdentityProvidersEndpoint, strings.TrimSuffix(issuer, "/")+"/") {
		return nil, fmt.Errorf("the %s endpoint %q of %s is not served by the issuer", supervisorDiscoveryKey, d.IdentityProvidersEndpoint, issuer)
	}
	return d, nil
}

// IdentityProvider is an upstream identity provider a Pinniped Supervisor offers.
type IdentityProvider struct {
	Name string `json:"name"`
	// Type is oidc, ldap, activedirectory or github.
	Type string `json:"type"`
	// Flows are the login flows it supports, the Supervisor's preferred one first.
	Flows []string `json:"flows,omitempty"`
}

// IdentityProviders lists a Supervisor's upstream identity providers.
func (d *Discovery) IdentityProviders(ctx context.Context, client *http.Client) ([]IdentityProvider, error) {
	if !d.IsSupervisor() {
		return nil, fmt.Errorf("%s is not a Pinniped Supervisor: its discovery document has no %q", d.Issuer, supervisorDiscoveryKey)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.IdentityProvidersEndpoint, nil)
	if err != nil {
		return nil, fmt.Errorf("building the identity provider discovery request: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, explainRequestError("identity provider discovery at "+d.IdentityProvidersEndpoint, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the identity providers of %s: %w", d.Issuer, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("identity provider discovery at %s answered %s", d.IdentityProvidersEndpoint, resp.Status)
	}
	var list struct {
		IdentityProviders []IdentityProvider `json:"pinniped_identity_providers"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decoding the identity providers of %s: %w", d.Issuer, err)
	}
	return list.IdentityProviders, nil
}

// FindIdentityProvider returns the provider named name (and of type typ, unless typ is empty).
func FindIdentityProvider(idps []IdentityProvider, name, typ string) (*IdentityProvider, error) {
	var names []string
	for i, idp := range idps {
		if idp.Name == name && (typ == "" || idp.Type == typ) {
			return &idps[i], nil
		}
		names = append(names, fmt.Sprintf("%q (%s)", idp.Name, idp.Type))
	}
	want := fmt.Sprintf("%q", name)
	if typ != "" {
		want += " of type " + typ
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("the Supervisor has no identity provider %s: it lists none", want)
	}
	return nil, fmt.Errorf("the Supervisor has no identity provider %s; it has %s", want, strings.Join(names, ", "))
}

func requireHTTPS(rawURL, what string) error {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("%s %q must be an https URL", what, rawURL)
	}
	return nil
}

// explainRequestError says what went wrong with a request to the issuer in terms the user can act on.
func explainRequestError(what string, err error) error {
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var verifyErr *tls.CertificateVerificationError
	var dnsErr *net.DNSError
	var opErr *net.OpError
	var netErr net.Error
	switch {
	case errors.As(err, &unknownCA):
		return fmt.Errorf("%s failed: %w: %w", what, ErrUntrustedCertificate, err)
	case errors.As(err, &hostErr):
		return fmt.Errorf("%s failed: the issuer's TLS certificate is not valid for its host name: %w", what, err)
	case errors.As(err, &verifyErr):
		return fmt.Errorf("%s failed: the issuer's TLS certificate was rejected: %w", what, err)
	case errors.As(err, &dnsErr), errors.As(err, &opErr):
		return fmt.Errorf("%s failed: the issuer is unreachable from this machine (check the issuer URL and the network): %w", what, err)
	case errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("%s failed: the issuer did not answer in time: %w", what, err)
	}
	return fmt.Errorf("%s failed: %w", what, err)
}
