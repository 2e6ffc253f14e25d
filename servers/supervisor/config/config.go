// Package config reads the Supervisor's static configuration: the `pinniped.yaml` key of the
// ConfigMap `pinniped-supervisor-static-config`, mounted as a file. Field names follow Pinniped's so
// existing install values keep working. Load fills defaults and reports every invalid field at once.
package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"sealion.dev/core/groupsuffix"
	"sealion.dev/core/reservednames"
	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/internal/serverboot"
	"sealion.dev/servers/internal/tlsprofile"
)

// Config is the Supervisor's static configuration.
type Config struct {
	// APIGroupSuffix replaces pinniped.dev in every API group the Supervisor serves and watches,
	// so that several installations share a cluster; pinniped.dev by default.
	APIGroupSuffix *string `json:"apiGroupSuffix,omitempty"`
	// Names are the names of the objects the Supervisor reads; the install manifests set them.
	Names Names `json:"names"`
	// Labels are set on the Secrets the Supervisor creates (keys, sessions), as the install's own
	// objects carry them, so that an uninstall by label finds them too.
	Labels map[string]string `json:"labels,omitempty"`
	// Log sets the log level and format.
	Log serverboot.Log `json:"log"`
	// TLS narrows the TLS 1.2 ciphers of the HTTPS endpoint and the aggregated API.
	TLS tlsprofile.Config `json:"tls"`
	// TLSProfile is what TLS makes, filled by Parse.
	TLSProfile tlsprofile.Profile `json:"-"`
	// Endpoints are where the FederationDomains' endpoints (and the probes, /healthz and /readyz) are served.
	Endpoints Endpoints `json:"endpoints"`
	// AggregatedAPIServerPort is where the OIDCClientSecretRequest API listens, behind the Service
	// names.apiService.
	AggregatedAPIServerPort *int64 `json:"aggregatedAPIServerPort,omitempty"`
	// AggregatedAPIServerDisableAdmissionPlugins names admission plugins of that API to turn off.
	AggregatedAPIServerDisableAdmissionPlugins []string `json:"aggregatedAPIServerDisableAdmissionPlugins,omitempty"`
	// OIDC tunes the OIDC upstreams.
	OIDC OIDC `json:"oidc"`
	// Upstreams tunes the connections to every upstream identity provider.
	Upstreams Upstreams `json:"upstreams"`
	// AllowedReservedNames are the exact "system:" usernames and groups a downstream identity may
	// still carry. Empty by default: no upstream or transformation can log in such an identity.
	AllowedReservedNames reservednames.Exceptions `json:"allowedReservedNames"`
	// Audit configures the audit events.
	Audit Audit `json:"audit"`
	// Tracing exports OpenTelemetry traces of the endpoints, their upstream calls and the aggregated
	// API to an OTLP/gRPC collector; off when absent.
	Tracing *serverboot.Tracing `json:"tracing,omitempty"`
}

// Audit configures the audit events, with Pinniped's keys.
type Audit struct {
	// LogUsernamesAndGroups writes usernames and groups in audit events instead of redacting them.
	LogUsernamesAndGroups audit.Setting `json:"logUsernamesAndGroups,omitempty"`
	// LogInternalPaths audits the requests of probes to /healthz and /readyz too.
	LogInternalPaths audit.Setting `json:"logInternalPaths,omitempty"`
	// TokenFingerprintKeySecret is the Secret in the Supervisor's namespace whose data "key" (at
	// least 32 bytes) keys the HMAC-SHA256 that names tokens in audit events (tokenID,
	// authorizeID); created with a random key when missing. <deployment name>-audit-token-fingerprint-key
	// by default.
	TokenFingerprintKeySecret string `json:"tokenFingerprintKeySecret,omitempty"`
}

// Names of the objects the Supervisor reads.
type Names struct {
	// DefaultTLSCertificateSecret is the kubernetes.io/tls Secret served to TLS clients whose server
	// name matches no FederationDomain with its own certificate.
	DefaultTLSCertificateSecret string `json:"defaultTLSCertificateSecret"`
	// APIService is the Service in front of the aggregated API; its serving certificate is for
	// <APIService>.<namespace>.svc and kept in the Secret ServingCertificateSecret names.
	APIService string `json:"apiService"`
}

// OIDC tunes the OIDC upstreams.
type OIDC struct {
	// IgnoreUserInfoEndpoint names the upstreams whose userinfo endpoint is not read.
	IgnoreUserInfoEndpoint IgnoreUserInfoEndpoint `json:"ignoreUserInfoEndpoint"`
}

// Upstreams tunes the connections to every upstream identity provider.
type Upstreams struct {
	// ConnectTimeoutSeconds bounds connecting to an upstream (OIDC, LDAP, Active Directory,
	// GitHub), its TLS handshake included, in seconds: an upstream that drops packets is reported
	// unreachable, and a login or refresh told so, after this long. 10 by default, 1 to 300.
	ConnectTimeoutSeconds *int64 `json:"connectTimeoutSeconds,omitempty"`
}

// ConnectTimeout is ConnectTimeoutSeconds as a duration.
func (u Upstreams) ConnectTimeout() time.Duration {
	return time.Duration(*u.ConnectTimeoutSeconds) * time.Second
}

// IgnoreUserInfoEndpoint names the upstreams whose userinfo endpoint is not read.
type IgnoreUserInfoEndpoint struct {
	// WhenIssuerExactlyMatches lists the OIDCIdentityProvider issuers treated as if they had no
	// userinfo endpoint: their claims are the ID token's alone, and they must issue refresh
	// tokens. For upstreams, such as ADFS, whose userinfo endpoint refuses what it should accept.
	WhenIssuerExactlyMatches []string `json:"whenIssuerExactlyMatches,omitempty"`
}

// ServingCertificateSecret is the Secret holding the aggregated API's CA and serving certificate.
func (n Names) ServingCertificateSecret() string { return n.APIService + "-tls-serving-certificate" }

// Endpoints configure the HTTPS listener and the optional plain HTTP listener.
type Endpoints struct {
	// HTTPS serves with the FederationDomains' certificates; tcp on :8443 by default.
	HTTPS *Endpoint `json:"https,omitempty"`
	// HTTP serves without TLS, for a TLS-terminating sidecar in the same pod: only on loopback
	// addresses or a unix socket.
	HTTP *Endpoint `json:"http,omitempty"`
}

// Endpoint is one listener.
type Endpoint struct {
	// Network is tcp, unix or disabled.
	Network string `json:"network"`
	// Address is host:port for tcp and a socket path for unix.
	Address string `json:"address,omitempty"`
}

// Networks of an Endpoint.
const (
	NetworkTCP      = "tcp"
	NetworkUnix     = "unix"
	NetworkDisabled = "disabled"
)

// Enabled reports whether the endpoint listens.
func (e *Endpoint) Enabled() bool { return e.Network != NetworkDisabled }

// Defaults.
const (
	DefaultAPIGroupSuffix = "pinniped.dev"
	DefaultHTTPSAddress   = ":8443"
	DefaultAPIService     = "pinniped-supervisor-api"
	// DefaultAggregatedAPIServerPort is the port kubelets also use, which clusters whose
	// control plane reaches nodes only on a few ports leave open.
	DefaultAggregatedAPIServerPort = 10250
	// DefaultUpstreamConnectTimeoutSeconds is a few round trips across continents and a slow
	// TLS handshake, with room: a login waits this long at most to learn an upstream is down.
	DefaultUpstreamConnectTimeoutSeconds = 10
	// MaxUpstreamConnectTimeoutSeconds is the longest allowed: past it, a login's own timeouts
	// (the CLI's, a browser's) end first.
	MaxUpstreamConnectTimeoutSeconds = 300
)

// Load reads, defaults and validates the file at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return Parse(data)
}

// Parse defaults and validates a configuration document.
func Parse(data []byte) (*Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("decoding config: %w", err)
	}
	c.setDefaults()
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("invalid config: %w", err)
	}
	return &c, nil
}

func (c *Config) setDefaults() {
	if c.APIGroupSuffix == nil {
		s := DefaultAPIGroupSuffix
		c.APIGroupSuffix = &s
	}
	if c.Names.APIService == "" {
		c.Names.APIService = DefaultAPIService
	}
	if c.AggregatedAPIServerPort == nil {
		p := int64(DefaultAggregatedAPIServerPort)
		c.AggregatedAPIServerPort = &p
	}
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
	if c.Upstreams.ConnectTimeoutSeconds == nil {
		t := int64(DefaultUpstreamConnectTimeoutSeconds)
		c.Upstreams.ConnectTimeoutSeconds = &t
	}
	if c.Endpoints.HTTPS == nil {
		c.Endpoints.HTTPS = &Endpoint{Network: NetworkTCP, Address: DefaultHTTPSAddress}
	}
	if c.Endpoints.HTTP == nil {
		c.Endpoints.HTTP = &Endpoint{Network: NetworkDisabled}
	}
}

func (c *Config) validate() error {
	var errs []error
	if err := groupsuffix.Validate(*c.APIGroupSuffix); err != nil {
		errs = append(errs, fmt.Errorf("apiGroupSuffix: %w", err))
	}
	if name := c.Names.DefaultTLSCertificateSecret; name == "" {
		errs = append(errs, errors.New("names.defaultTLSCertificateSecret: required"))
	} else if problems := validation.IsDNS1123Subdomain(name); len(problems) > 0 {
		errs = append(errs, fmt.Errorf("names.defaultTLSCertificateSecret: %q is not a valid Secret name: %s", name, strings.Join(problems, "; ")))
	}
	// The Service name becomes a DNS label of the serving certificate, and the Secret name
	// derived from it must fit too.
	if problems := validation.IsDNS1035Label(c.Names.APIService); len(problems) > 0 {
		errs = append(errs, fmt.Errorf("names.apiService: %q is not a valid Service name: %s", c.Names.APIService, strings.Join(problems, "; ")))
	} else if problems := validation.IsDNS1123Subdomain(c.Names.ServingCertificateSecret()); len(problems) > 0 {
		errs = append(errs, fmt.Errorf("names.apiService: the serving certificate Secret name %q is not valid: %s", c.Names.ServingCertificateSecret(), strings.Join(problems, "; ")))
	}
	if err := c.Log.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := serverboot.ValidateTracing(c.Tracing); err != nil {
		errs = append(errs, err)
	}
	profile, err := tlsprofile.New(c.TLS.OneDotTwo.AllowedCiphers)
	if err != nil {
		errs = append(errs, fmt.Errorf("tls.onedottwo.allowedCiphers: %w", err))
	}
	c.TLSProfile = profile
	if p := *c.AggregatedAPIServerPort; p < 1024 || p > 65535 {
		errs = append(errs, fmt.Errorf("aggregatedAPIServerPort: must be within 1024-65535, got %d", p))
	} else if e := c.Endpoints.HTTPS; e.Network == NetworkTCP && portOf(e.Address) == p {
		errs = append(errs, fmt.Errorf("aggregatedAPIServerPort: %d is also the port of endpoints.https", p))
	}
	errs = append(errs, validateEndpoint("endpoints.https", c.Endpoints.HTTPS, false))
	errs = append(errs, validateEndpoint("endpoints.http", c.Endpoints.HTTP, true))
	https, http := c.Endpoints.HTTPS, c.Endpoints.HTTP
	if !https.Enabled() && !http.Enabled() {
		errs = append(errs, errors.New("endpoints: https and http cannot both be disabled"))
	}
	if https.Enabled() && http.Enabled() && https.Network == http.Network && https.Address == http.Address {
		errs = append(errs, fmt.Errorf("endpoints: https and http both listen on %s %s", https.Network, https.Address))
	}
	if t := *c.Upstreams.ConnectTimeoutSeconds; t < 1 || t > MaxUpstreamConnectTimeoutSeconds {
		errs = append(errs, fmt.Errorf("upstreams.connectTimeoutSeconds: must be within 1-%d, got %d", MaxUpstreamConnectTimeoutSeconds, t))
	}
	if err := c.AllowedReservedNames.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("allowedReservedNames: %w", err))
	}
	if err := c.Audit.LogUsernamesAndGroups.Validate("audit.logUsernamesAndGroups"); err != nil {
		errs = append(errs, err)
	}
	if err := c.Audit.LogInternalPaths.Validate("audit.logInternalPaths"); err != nil {
		errs = append(errs, err)
	}
	if err := audit.ValidateSecretName("audit.tokenFingerprintKeySecret", c.Audit.TokenFingerprintKeySecret); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func validateEndpoint(field string, e *Endpoint, loopbackOnly bool) error {
	switch e.Network {
	case NetworkDisabled:
		if e.Address != "" {
			return fmt.Errorf("%s.address: set to %q while disabled, should be empty", field, e.Address)
		}
		return nil
	case NetworkUnix:
		if e.Address == "" {
			return fmt.Errorf("%s.address: required for network unix", field)
		}
		return nil
	case NetworkTCP:
		host, _, err := net.SplitHostPort(e.Address)
		if err != nil {
			return fmt.Errorf("%s.address: %q is not host:port: %w", field, e.Address, err)
		}
		if loopbackOnly && !isLoopback(host) {
			return fmt.Errorf("%s.address: %q must be on a loopback address (127.0.0.1, [::1] or localhost): plain HTTP is only for a sidecar in the same pod", field, e.Address)
		}
		return nil
	}
	return fmt.Errorf("%s.network: must be one of tcp, unix, disabled; got %q", field, e.Network)
}

// portOf returns the port of a host:port address, or 0 when it has none.
func portOf(address string) int64 {
	_, port, err := net.SplitHostPort(address)
	if err != nil {
		return 0
	}
	p, _ := strconv.ParseInt(port, 10, 64)
	return p
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
