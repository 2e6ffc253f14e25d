// Package discovery serves the documents that tell clients about an issuer, at these paths below
// it:
//
//	/.well-known/openid-configuration      OIDC discovery (RFC 8414 / OpenID Connect Discovery 1.0),
//	                                       with Pinniped's pointer to IDP discovery
//	/jwks.json                             the public keys ID tokens are verified with
//	/v1alpha1/pinniped_identity_providers  Pinniped's IDP discovery: names, types and login flows
//
// Documents are rendered once per issuer when it is mounted, since issuers are replaced whole when
// anything about them changes.
package discovery

import (
	"bytes"
	"encoding/json"
	"net/http"

	"sealion.dev/servers/supervisor/internal/issuer"
)

// Paths of the endpoints, relative to the issuer, including those other packages serve that the
// discovery document advertises.
const (
	PathOIDCDiscovery       = "/.well-known/openid-configuration"
	PathJWKS                = "/jwks.json"
	PathIdentityProviders   = "/v1alpha1/pinniped_identity_providers"
	PathAuthorize           = "/oauth2/authorize"
	PathToken               = "/oauth2/token"
	PathDeviceAuthorization = "/oauth2/device_authorization"
	PathRevocation          = "/oauth2/revoke"
	PathEndSession          = "/oauth2/logout"
)

// Document is the OIDC discovery document of an issuer.
type Document struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	JWKSURI                           string   `json:"jwks_uri"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	ResponseModesSupported            []string `json:"response_modes_supported"`
	SubjectTypesSupported             []string `json:"subject_types_supported"`
	IDTokenSigningAlgValuesSupported  []string `json:"id_token_signing_alg_values_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ClaimsSupported                   []string `json:"claims_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	// DeviceAuthorizationEndpoint and GrantTypesSupported are additions to Pinniped's document:
	// the device authorization grant's endpoint (RFC 8628 section 4) and the grants the token
	// endpoint answers, that one included (RFC 8414 section 2).
	DeviceAuthorizationEndpoint string   `json:"device_authorization_endpoint"`
	GrantTypesSupported         []string `json:"grant_types_supported"`
	// RevocationEndpoint and RevocationEndpointAuthMethodsSupported are additions too: the token
	// revocation endpoint (RFC 7009; RFC 8414 section 2), with which clients sign their users out.
	RevocationEndpoint                     string   `json:"revocation_endpoint"`
	RevocationEndpointAuthMethodsSupported []string `json:"revocation_endpoint_auth_methods_supported"`
	// EndSessionEndpoint is one more: where a web application sends the browser to sign its user
	// out (OpenID Connect RP-Initiated Logout 1.0).
	EndSessionEndpoint string `json:"end_session_endpoint"`
	// Supervisor tells clients this issuer is a Pinniped Supervisor, and where IDP discovery is.
	Supervisor SupervisorDiscovery `json:"discovery.supervisor.pinniped.dev/v1alpha1"`
}

// SupervisorDiscovery is the Supervisor-specific part of the discovery document.
type SupervisorDiscovery struct {
	IdentityProvidersEndpoint string `json:"pinniped_identity_providers_endpoint"`
}

// IdentityProviders is the IDP discovery document.
type IdentityProviders struct {
	IdentityProviders []IdentityProvider `json:"pinniped_identity_providers"`
	SupportedTypes    []SupportedType    `json:"pinniped_supported_identity_provider_types"`
}

// IdentityProvider describes one identity provider of the issuer.
type IdentityProvider struct {
	Name  string                      `json:"name"`
	Type  issuer.IdentityProviderType `json:"type"`
	Flows []issuer.Flow               `json:"flows"`
}

// SupportedType is an identity provider type the Supervisor supports.
type SupportedType struct {
	Type issuer.IdentityProviderType `json:"type"`
}

// NewDocument returns the OIDC discovery document of iss.
func NewDocument(iss *issuer.Issuer) Document {
	return Document{
		Issuer:                            iss.URL,
		AuthorizationEndpoint:             iss.Endpoint(PathAuthorize),
		TokenEndpoint:                     iss.Endpoint(PathToken),
		JWKSURI:                           iss.Endpoint(PathJWKS),
		ResponseTypesSupported:            []string{"code"},
		ResponseModesSupported:            []string{"query", "form_post"},
		SubjectTypesSupported:             []string{"public"},
		IDTokenSigningAlgValuesSupported:  []string{"ES256"},
		TokenEndpointAuthMethodsSupported: []string{"client_secret_basic"},
		ScopesSupported:                   []string{"openid", "offline_access", "pinniped:request-audience", "username", "groups"},
		ClaimsSupported:                   []string{"username", "groups", "additionalClaims"},
		CodeChallengeMethodsSupported:     []string{"S256"},
		DeviceAuthorizationEndpoint:       iss.Endpoint(PathDeviceAuthorization),
		GrantTypesSupported: []string{"authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:token-exchange",
			"urn:ietf:params:oauth:grant-type:device_code"},
		RevocationEndpoint:                     iss.Endpoint(PathRevocation),
		RevocationEndpointAuthMethodsSupported: []string{"client_secret_basic", "none"},
		EndSessionEndpoint:                     iss.Endpoint(PathEndSession),
		Supervisor:                             SupervisorDiscovery{IdentityProvidersEndpoint: iss.Endpoint(PathIdentityProviders)},
	}
}

// NewIdentityProviders returns the IDP discovery document of iss.
func NewIdentityProviders(iss *issuer.Issuer) IdentityProviders {
	doc := IdentityProviders{IdentityProviders: []IdentityProvider{}}
	for _, idp := range iss.IdentityProviders {
		doc.IdentityProviders = append(doc.IdentityProviders, IdentityProvider{Name: idp.DisplayName, Type: idp.Type, Flows: idp.Flows})
	}
	for _, t := range issuer.Types {
		doc.SupportedTypes = append(doc.SupportedTypes, SupportedType{Type: t})
	}
	return doc
}

// Endpoints mounts the discovery, JWKS and IDP discovery endpoints.
type Endpoints struct{}

var _ issuer.Endpoints = Endpoints{}

// Mount is part of the issuer.Endpoints interface. An issuer without keys answers its JWKS path
// with upstream's 404.
func (Endpoints) Mount(r issuer.Router, iss *issuer.Issuer) {
	r.Handle(PathOIDCDiscovery, jsonDocument(NewDocument(iss)))
	r.Handle(PathIdentityProviders, jsonDocument(NewIdentityProviders(iss)))
	if iss.JWKS == nil {
		r.Handle(PathJWKS, getOnly(func(w http.ResponseWriter) {
			http.Error(w, "JWKS not found for requested issuer", http.StatusNotFound)
		}))
		return
	}
	r.Handle(PathJWKS, jsonDocument(iss.JWKS.Public))
}

// jsonDocument serves v, encoded once as upstream encodes it (with a final newline), to GET
// requests.
func jsonDocument(v any) http.Handler {
	var body bytes.Buffer
	err := json.NewEncoder(&body).Encode(v)
	return getOnly(func(w http.ResponseWriter) {
		if err != nil { // a key set go-jose cannot encode
			http.Error(w, "internal server error", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body.Bytes())
	})
}

// getOnly answers GET requests with serve and others, HEAD included, with upstream's 405.
func getOnly(serve func(http.ResponseWriter)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "Method not allowed (try GET)", http.StatusMethodNotAllowed)
			return
		}
		serve(w)
	})
}
