// Package credentialplugin holds what the kubectl credential plugin commands ("login static",
// "login oidc") share: the --enable-concierge and --concierge-* flags and the exchange they
// configure, and the credential cache.
package credentialplugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientauthv1beta1 "k8s.io/client-go/pkg/apis/clientauthentication/v1beta1"

	"sealion.dev/cli/internal/deps"
	"sealion.dev/cli/internal/execcredential"
	"sealion.dev/cli/pkg/conciergeclient"
	"sealion.dev/cli/pkg/credentialcache"
	"sealion.dev/core/groupsuffix"
)

// DefaultCredentialCache is the --credential-cache default; "~/" is the user's home.
const DefaultCredentialCache = "~/.config/pinniped/credentials.yaml"

// exchangeTimeout bounds the TokenCredentialRequest.
const exchangeTimeout = 30 * time.Second

// ConciergeFlags say whether and where the credential is exchanged at the Concierge.
type ConciergeFlags struct {
	enable         bool
	authType       string
	authName       string
	endpoint       string
	caBundleData   string
	apiGroupSuffix string
	// Accepted so that kubeconfigs of older CLIs keep working; they change nothing.
	namespace       string
	isClusterScoped bool
}

// AddFlags registers the flags on cmd.
func (c *ConciergeFlags) AddFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.BoolVar(&c.enable, "enable-concierge", false, "Use the Concierge to exchange the credential for a cluster-specific one during login")
	fs.StringVar(&c.authType, "concierge-authenticator-type", "", "Concierge authenticator type (e.g., 'webhook', 'jwt')")
	fs.StringVar(&c.authName, "concierge-authenticator-name", "", "Concierge authenticator name")
	fs.StringVar(&c.endpoint, "concierge-endpoint", "", "API base for the Concierge endpoint (default: the cluster kubectl passes in KUBERNETES_EXEC_INFO)")
	fs.StringVar(&c.caBundleData, "concierge-ca-bundle-data", "", "CA bundle to use when connecting to the Concierge (base64-encoded PEM)")
	fs.StringVar(&c.apiGroupSuffix, "concierge-api-group-suffix", groupsuffix.Default, "Concierge API group suffix")
	fs.StringVar(&c.namespace, "concierge-namespace", "pinniped-concierge", "Namespace in which the Concierge was installed (no longer used)")
	fs.BoolVar(&c.isClusterScoped, "concierge-is-cluster-scoped", true, "Whether the Concierge's APIs are cluster-scoped (no longer used)")
	_ = fs.MarkHidden("concierge-namespace")
	_ = fs.MarkHidden("concierge-is-cluster-scoped")
}

// Config returns the Concierge to exchange the credential at, or nil when it is not enabled. The
// endpoint and CA default to the cluster kubectl names.
func (c *ConciergeFlags) Config(info *execcredential.Info) (*conciergeclient.Config, error) {
	if !c.enable {
		return nil, nil
	}
	kind, err := conciergeclient.AuthenticatorKind(c.authType)
	if err != nil {
		return nil, fmt.Errorf("--concierge-authenticator-type: %w", err)
	}
	if c.authName == "" {
		return nil, errors.New("--concierge-authenticator-name is required with --enable-concierge")
	}
	cfg := &conciergeclient.Config{
		Endpoint:          c.endpoint,
		APIGroupSuffix:    c.apiGroupSuffix,
		AuthenticatorKind: kind,
		AuthenticatorName: c.authName,
	}
	if cfg.CABundle, err = conciergeclient.DecodeCABundle(c.caBundleData); err != nil {
		return nil, fmt.Errorf("--concierge-ca-bundle-data: %w", err)
	}
	if cfg.Endpoint == "" {
		if info.Cluster == nil {
			return nil, errors.New("--concierge-endpoint is required when kubectl does not provide cluster info (provideClusterInfo: true)")
		}
		cfg.Endpoint = info.Cluster.Server
		if cfg.CABundle == nil {
			cfg.CABundle = info.Cluster.CertificateAuthorityData
		}
	}
	return cfg, nil
}

// Exchange trades token at the Concierge for a cluster credential.
func Exchange(ctx context.Context, d deps.Deps, cfg conciergeclient.Config, token string) (*clientauthv1beta1.ExecCredentialStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, exchangeTimeout)
	defer cancel()
	cred, err := d.ExchangeToken(ctx, cfg, token)
	if err != nil {
		return nil, fmt.Errorf("could not complete the Concierge credential exchange: %w", err)
	}
	return &clientauthv1beta1.ExecCredentialStatus{
		ExpirationTimestamp:   Expiry(cred.ExpirationTimestamp),
		Token:                 cred.Token,
		ClientCertificateData: cred.ClientCertificateData,
		ClientKeyData:         cred.ClientKeyData,
	}, nil
}

// CredentialCache is the credential cache of one plugin run. A nil *CredentialCache (the cache
// disabled) misses and stores nothing. Its failures are warnings: they must not block a login.
type CredentialCache struct {
	cache  *credentialcache.Cache
	key    credentialcache.Key
	errOut io.Writer
}

// OpenCredentialCache returns the cache at path ("" disables it) for this run, whose entries are
// keyed by the program's arguments and the cluster kubectl names.
func OpenCredentialCache(d deps.Deps, path string, info *execcredential.Info) (*CredentialCache, error) {
	if path == "" {
		return nil, nil
	}
	path, err := ExpandHome(path, d.HomeDir)
	if err != nil {
		return nil, err
	}
	return &CredentialCache{
		cache:  credentialcache.New(path, credentialcache.WithClock(d.Now)),
		key:    credentialcache.Key{Args: d.Args, Cluster: info.Cluster},
		errOut: d.ErrOut,
	}, nil
}

// Get returns the cached credential, or nil.
func (c *CredentialCache) Get() *clientauthv1beta1.ExecCredentialStatus {
	if c == nil {
		return nil
	}
	cached, err := c.cache.Get(c.key)
	if err != nil {
		fmt.Fprintf(c.errOut, "warning: reading the credential cache: %v\n", err)
	}
	return cached
}

// Put stores the credential.
func (c *CredentialCache) Put(status *clientauthv1beta1.ExecCredentialStatus) {
	if c == nil {
		return
	}
	if err := c.cache.Put(c.key, status); err != nil {
		fmt.Fprintf(c.errOut, "warning: writing the credential cache: %v\n", err)
	}
}

// ExpandHome replaces a leading "~/" with the user's home directory.
func ExpandHome(path string, homeDir func() (string, error)) (string, error) {
	rest, ok := strings.CutPrefix(path, "~/")
	if !ok {
		return path, nil
	}
	home, err := homeDir()
	if err != nil {
		return "", fmt.Errorf("finding the home directory for %s: %w", path, err)
	}
	return filepath.Join(home, rest), nil
}

// Expiry converts an expiry for an ExecCredential, where zero means none.
func Expiry(t metav1.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
