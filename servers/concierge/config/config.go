// Package config reads the Concierge's static configuration: the `pinniped.yaml` key of the
// ConfigMap `pinniped-concierge-config`, mounted as a file. Field names follow Pinniped's so existing
// install values keep working. Load fills defaults and reports every invalid field at once.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
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

// Config is the Concierge's static configuration.
type Config struct {
	// APIGroupSuffix replaces pinniped.dev in every API group the Concierge serves and watches, so
	// that several installations share a cluster; pinniped.dev by default.
	APIGroupSuffix *string `json:"apiGroupSuffix,omitempty"`
	// AggregatedAPIServerPort is where the TokenCredentialRequest and WhoAmIRequest APIs listen;
	// 1024-65535, 10250 by default.
	AggregatedAPIServerPort *int64 `json:"aggregatedAPIServerPort,omitempty"`
	// ImpersonationProxyServerPort is where the impersonation proxy listens when it runs; 1024-65535
	// and not the aggregated API's port, 8444 by default.
	ImpersonationProxyServerPort *int64 `json:"impersonationProxyServerPort,omitempty"`
	// AggregatedAPIServerDisableAdmissionPlugins names admission plugins to turn off.
	AggregatedAPIServerDisableAdmissionPlugins []string `json:"aggregatedAPIServerDisableAdmissionPlugins,omitempty"`
	// API configures the aggregated API's own serving certificate.
	API API `json:"api"`
	// Names are the names of the objects the Concierge owns; the install manifests set them.
	Names Names `json:"names"`
	// Labels are set on the Secrets and other objects the Concierge creates, as the install's own
	// objects carry them, so that an uninstall by label finds them too.
	Labels map[string]string `json:"labels,omitempty"`
	// Log sets the log level and format.
	Log serverboot.Log `json:"log"`
	// Discovery configures what the CredentialIssuer advertises.
	Discovery Discovery `json:"discovery"`
	// TLS narrows the TLS 1.2 ciphers of the aggregated API and the impersonation proxy.
	TLS tlsprofile.Config `json:"tls"`
	// TLSProfile is what TLS makes, filled by Parse.
	TLSProfile tlsprofile.Profile `json:"-"`
	// Signer is the CA that signs TokenCredentialRequest client certificates, read from files and
	// reloaded when they change. Optional: without it, the kube cert agent feeds the signer.
	Signer *Signer `json:"signer,omitempty"`
	// KubeCertAgent configures the kube cert agent, which feeds the signer when Signer is unset.
	KubeCertAgent KubeCertAgent `json:"kubeCertAgent"`
	// AllowedReservedNames are the exact "system:" usernames and groups a credential may still be
	// issued for. Empty by default: no authenticator can obtain a credential for a reserved name.
	AllowedReservedNames reservednames.Exceptions `json:"allowedReservedNames"`
	// Audit configures the audit events.
	Audit Audit `json:"audit"`
	// Tracing exports OpenTelemetry traces of the aggregated API (TokenCredentialRequests, their
	// authenticators' calls to issuers and webhooks) to an OTLP/gRPC collector; off when absent.
	Tracing *serverboot.Tracing `json:"tracing,omitempty"`
	// CredentialIssuerCreatedByInstall says the install creates the CredentialIssuer (and creates
	// it again on upgrade), as the Helm chart's hook does once the Concierge runs: the Concierge
	// then waits for it instead of creating it when it is missing, which would make Helm's
	// creation fail. False by default: the Concierge creates a missing one with the default spec.
	CredentialIssuerCreatedByInstall bool `json:"credentialIssuerCreatedByInstall,omitempty"`
}

// Audit configures the audit events, with Pinniped's keys.
type Audit struct {
	// LogUsernamesAndGroups writes usernames and groups in audit events instead of redacting them.
	LogUsernamesAndGroups audit.Setting `json:"logUsernamesAndGroups,omitempty"`
	// TokenFingerprintKeySecret is the Secret in the Concierge's namespace whose data "key" (at
	// least 32 bytes) keys the HMAC-SHA256 that names tokens in audit events (tokenID); created
	// with a random key when missing. <deployment name>-audit-token-fingerprint-key by default.
	TokenFingerprintKeySecret string `json:"tokenFingerprintKeySecret,omitempty"`
}

// KubeCertAgent configures the agent that reads the cluster signing key on a
// kube-controller-manager node.
type KubeCertAgent struct {
	// NamePrefix, without its trailing dash, is the name of the agent Deployment (Pinniped's meaning).
	NamePrefix *string `json:"namePrefix,omitempty"`
	// Image runs the agent; empty means the Concierge's own image, which ships the agent binary.
	Image string `json:"image,omitempty"`
	// ImagePullSecrets names Secrets in the Concierge's namespace for pulling Image.
	ImagePullSecrets []string `json:"imagePullSecrets,omitempty"`
	// PriorityClassName is the agent pod's priority class; none by default.
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// RunAsUser is the agent pod's user; 0 (root) by default, which reads the key on kubeadm's
	// nodes.
	RunAsUser *int64 `json:"runAsUser,omitempty"`
	// RunAsGroup is the agent pod's group; 0 by default.
	RunAsGroup *int64 `json:"runAsGroup,omitempty"`
	// DeploymentStrategyType is Recreate or RollingUpdate; the Deployment's default when unset.
	DeploymentStrategyType *string `json:"deploymentStrategyType,omitempty"`
}

// AgentDeploymentName is the name of the kube cert agent's Deployment.
func (c *Config) AgentDeploymentName() string {
	return strings.TrimSuffix(*c.KubeCertAgent.NamePrefix, "-")
}

// API configures the aggregated API's own serving certificate.
type API struct {
	// ServingCertificate sets the certificate's lifetime and renewal.
	ServingCertificate ServingCertificate `json:"servingCertificate"`
}

// ServingCertificate sets the serving certificate's lifetime and when it is renewed.
type ServingCertificate struct {
	// DurationSeconds is the certificate's lifetime; 365 days by default.
	DurationSeconds *int64 `json:"durationSeconds,omitempty"`
	// RenewBeforeSeconds is the certificate age at which it is renewed (Pinniped's meaning),
	// smaller than durationSeconds; 273 days by default.
	RenewBeforeSeconds *int64 `json:"renewBeforeSeconds,omitempty"`
}

// Names of the objects the Concierge owns.
type Names struct {
	// ServingCertificateSecret is the Secret holding the aggregated API's CA and serving
	// certificate. Required.
	ServingCertificateSecret string `json:"servingCertificateSecret"`
	// CredentialIssuer is the CredentialIssuer the Concierge configures itself from and reports
	// its strategies in. Required.
	CredentialIssuer string `json:"credentialIssuer"`
	// APIService is the name of the Service behind the aggregated APIs. Required.
	APIService string `json:"apiService"`
	// AgentServiceAccount is the kube cert agent's ServiceAccount; by default named like its
	// Deployment.
	AgentServiceAccount string `json:"agentServiceAccount,omitempty"`
	// ImpersonationLoadBalancerService is the impersonation proxy's LoadBalancer Service;
	// pinniped-concierge-impersonation-proxy-load-balancer by default.
	ImpersonationLoadBalancerService string `json:"impersonationLoadBalancerService,omitempty"`
	// ImpersonationClusterIPService is the impersonation proxy's ClusterIP Service;
	// pinniped-concierge-impersonation-proxy-cluster-ip by default.
	ImpersonationClusterIPService string `json:"impersonationClusterIPService,omitempty"`
	// ImpersonationTLSCertificateSecret holds the proxy's generated serving certificate;
	// pinniped-concierge-impersonation-proxy-tls-serving-certificate by default.
	ImpersonationTLSCertificateSecret string `json:"impersonationTLSCertificateSecret,omitempty"`
	// ImpersonationCACertificateSecret holds the CA of that serving certificate;
	// pinniped-concierge-impersonation-proxy-ca-certificate by default.
	ImpersonationCACertificateSecret string `json:"impersonationCACertificateSecret,omitempty"`
	// ImpersonationSignerSecret holds the CA signing the client certificates the proxy accepts;
	// pinniped-concierge-impersonation-proxy-signer-ca-certificate by default.
	ImpersonationSignerSecret string `json:"impersonationSignerSecret,omitempty"`
	// ImpersonationProxyServiceAccount is the ServiceAccount, allowed only to impersonate, whose
	// token (from the TokenRequest API) the impersonation proxy forwards its users' requests with.
	ImpersonationProxyServiceAccount string `json:"impersonationProxyServiceAccount,omitempty"`
	// ImpersonationProxyLegacySecret is the token Secret of that ServiceAccount that older
	// installs kept; the Concierge deletes it.
	ImpersonationProxyLegacySecret string `json:"impersonationProxyLegacySecret,omitempty"`
}

// Discovery configures what the CredentialIssuer advertises.
type Discovery struct {
	// URL, when set, is the API server address the CredentialIssuer tells clients of the
	// TokenCredentialRequest API, instead of the one kube-public/cluster-info holds.
	URL *string `json:"url,omitempty"`
}

// Signer names a CA certificate and key on disk.
type Signer struct {
	// CertificateFile is the PEM CA certificate's path, as mounted in the pod.
	CertificateFile string `json:"certificateFile"`
	// PrivateKeyFile is the PEM private key's path, as mounted in the pod.
	PrivateKeyFile string `json:"privateKeyFile"`
}

// Defaults.
const (
	DefaultAPIGroupSuffix          = "pinniped.dev"
	DefaultAggregatedAPIServerPort = 10250
	DefaultImpersonationProxyPort  = 8444
	DefaultServingCertDuration     = 365 * 24 * time.Hour
	// DefaultServingCertRenewBefore is, as in Pinniped, the certificate age at which it is renewed.
	DefaultServingCertRenewBefore  = 273 * 24 * time.Hour
	DefaultKubeCertAgentNamePrefix = "pinniped-concierge-kube-cert-agent-"
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
	if c.AggregatedAPIServerPort == nil {
		p := int64(DefaultAggregatedAPIServerPort)
		c.AggregatedAPIServerPort = &p
	}
	if c.ImpersonationProxyServerPort == nil {
		p := int64(DefaultImpersonationProxyPort)
		c.ImpersonationProxyServerPort = &p
	}
	for field, def := range map[*string]string{
		&c.Names.ImpersonationLoadBalancerService:  "pinniped-concierge-impersonation-proxy-load-balancer",
		&c.Names.ImpersonationClusterIPService:     "pinniped-concierge-impersonation-proxy-cluster-ip",
		&c.Names.ImpersonationTLSCertificateSecret: "pinniped-concierge-impersonation-proxy-tls-serving-certificate",
		&c.Names.ImpersonationCACertificateSecret:  "pinniped-concierge-impersonation-proxy-ca-certificate",
		&c.Names.ImpersonationSignerSecret:         "pinniped-concierge-impersonation-proxy-signer-ca-certificate",
		&c.Names.ImpersonationProxyServiceAccount:  "pinniped-concierge-impersonation-proxy",
		&c.Names.ImpersonationProxyLegacySecret:    "pinniped-concierge-impersonation-proxy",
	} {
		if *field == "" {
			*field = def
		}
	}
	sc := &c.API.ServingCertificate
	if sc.DurationSeconds == nil {
		d := int64(DefaultServingCertDuration / time.Second)
		sc.DurationSeconds = &d
	}
	if sc.RenewBeforeSeconds == nil {
		r := int64(DefaultServingCertRenewBefore / time.Second)
		sc.RenewBeforeSeconds = &r
	}
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
	if c.KubeCertAgent.NamePrefix == nil {
		p := DefaultKubeCertAgentNamePrefix
		c.KubeCertAgent.NamePrefix = &p
	}
	if c.Names.AgentServiceAccount == "" {
		c.Names.AgentServiceAccount = c.AgentDeploymentName()
	}
}

func (c *Config) validate() error {
	var errs []error
	if err := groupsuffix.Validate(*c.APIGroupSuffix); err != nil {
		errs = append(errs, fmt.Errorf("apiGroupSuffix: %w", err))
	}
	if p := *c.AggregatedAPIServerPort; p < 1024 || p > 65535 {
		errs = append(errs, fmt.Errorf("aggregatedAPIServerPort: must be within 1024-65535, got %d", p))
	}
	if p := *c.ImpersonationProxyServerPort; p < 1024 || p > 65535 || p == *c.AggregatedAPIServerPort {
		errs = append(errs, fmt.Errorf("impersonationProxyServerPort: must be within 1024-65535 and differ from aggregatedAPIServerPort, got %d", p))
	}
	sc := c.API.ServingCertificate
	if *sc.DurationSeconds <= 0 || *sc.RenewBeforeSeconds <= 0 || *sc.RenewBeforeSeconds >= *sc.DurationSeconds {
		errs = append(errs, errors.New("api.servingCertificate: durationSeconds and renewBeforeSeconds must be positive and renewBeforeSeconds smaller"))
	}
	for field, v := range map[string]string{
		"names.servingCertificateSecret": c.Names.ServingCertificateSecret,
		"names.credentialIssuer":         c.Names.CredentialIssuer,
		"names.apiService":               c.Names.APIService,
	} {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s: required", field))
		}
	}
	if err := c.Log.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := serverboot.ValidateTracing(c.Tracing); err != nil {
		errs = append(errs, err)
	}
	if u := c.Discovery.URL; u != nil {
		if err := validateDiscoveryURL(*u); err != nil {
			errs = append(errs, fmt.Errorf("discovery.url: %w", err))
		}
	}
	profile, err := tlsprofile.New(c.TLS.OneDotTwo.AllowedCiphers)
	if err != nil {
		errs = append(errs, fmt.Errorf("tls.onedottwo.allowedCiphers: %w", err))
	}
	c.TLSProfile = profile
	if s := c.Signer; s != nil && (s.CertificateFile == "" || s.PrivateKeyFile == "") {
		errs = append(errs, errors.New("signer: certificateFile and privateKeyFile are both required"))
	}
	errs = append(errs, c.validateNamesAndAgent()...)
	if err := c.AllowedReservedNames.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("allowedReservedNames: %w", err))
	}
	if err := c.Audit.LogUsernamesAndGroups.Validate("audit.logUsernamesAndGroups"); err != nil {
		errs = append(errs, err)
	}
	if err := audit.ValidateSecretName("audit.tokenFingerprintKeySecret", c.Audit.TokenFingerprintKeySecret); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// validateDiscoveryURL accepts what clients can reach an API server at: an https URL with a host.
func validateDiscoveryURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("%q is not an https URL with a host", s)
	}
	return nil
}

// validateNamesAndAgent checks the names of the objects the Concierge creates or deletes, and
// the kube cert agent's settings.
func (c *Config) validateNamesAndAgent() []error {
	var errs []error
	subdomain := func(field, name string) {
		if problems := validation.IsDNS1123Subdomain(name); len(problems) > 0 {
			errs = append(errs, fmt.Errorf("%s: %q is not a valid object name: %s", field, name, strings.Join(problems, "; ")))
		}
	}
	subdomain("kubeCertAgent.namePrefix", c.AgentDeploymentName())
	subdomain("names.agentServiceAccount", c.Names.AgentServiceAccount)
	subdomain("names.impersonationProxyServiceAccount", c.Names.ImpersonationProxyServiceAccount)
	subdomain("names.impersonationProxyLegacySecret", c.Names.ImpersonationProxyLegacySecret)
	for i, name := range c.KubeCertAgent.ImagePullSecrets {
		subdomain(fmt.Sprintf("kubeCertAgent.imagePullSecrets[%d]", i), name)
	}
	if name := c.KubeCertAgent.PriorityClassName; name != "" {
		subdomain("kubeCertAgent.priorityClassName", name)
	}
	if image := c.KubeCertAgent.Image; strings.TrimSpace(image) != image {
		errs = append(errs, fmt.Errorf("kubeCertAgent.image: %q has surrounding spaces", image))
	}
	for field, id := range map[string]*int64{"runAsUser": c.KubeCertAgent.RunAsUser, "runAsGroup": c.KubeCertAgent.RunAsGroup} {
		if id != nil && *id < 0 {
			errs = append(errs, fmt.Errorf("kubeCertAgent.%s: %s must be 0 or greater (instead of %d)", field, field, *id))
		}
	}
	if s := c.KubeCertAgent.DeploymentStrategyType; s != nil && *s != "Recreate" && *s != "RollingUpdate" {
		errs = append(errs, fmt.Errorf("kubeCertAgent.deploymentStrategyType: deploymentStrategyType must be one of [Recreate RollingUpdate] (instead of %s)", *s))
	}
	return errs
}
