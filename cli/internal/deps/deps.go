// Package deps holds what the pinniped commands take from the outside world (streams, clock,
// environment, clients), so that each command's run function can be tested with fakes.
package deps

import (
	"context"
	"io"
	"os"
	"time"

	"k8s.io/client-go/rest"

	"sealion.dev/cli/pkg/conciergeclient"
	"sealion.dev/cli/pkg/oidclogin"
	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
	authenticationclient "sealion.dev/core/generated/concierge/clientset/versioned/typed/authentication/v1alpha1"
	configclient "sealion.dev/core/generated/concierge/clientset/versioned/typed/config/v1alpha1"
	identityclient "sealion.dev/core/generated/concierge/clientset/versioned/typed/identity/v1alpha1"
	"sealion.dev/core/tracing"
)

// Deps is passed to every command's NewCommand.
type Deps struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	// Now is the clock.
	Now func() time.Time
	// Getenv reads an environment variable (KUBERNETES_EXEC_INFO, --token-env, KUBECONFIG).
	Getenv func(string) string
	// Args are the program's arguments after its name; the credential cache keys on them.
	Args []string
	// Executable is the path of the running pinniped binary.
	Executable func() (string, error)
	// HomeDir expands "~/" in default file paths.
	HomeDir func() (string, error)

	// NewConciergeClient builds a client for the Concierge's APIs from a rest config that
	// already carries the API group suffix transport.
	NewConciergeClient func(*rest.Config) (ConciergeClient, error)
	// ExchangeToken creates a TokenCredentialRequest (conciergeclient in production).
	ExchangeToken func(context.Context, conciergeclient.Config, string) (*loginv1alpha1.ClusterCredential, error)

	// OpenURL opens a URL in the user's browser.
	OpenURL func(string) error
	// Prompter asks the user for input on the terminal; nil when stdin is not a terminal.
	Prompter oidclogin.Prompter
}

// Default returns the real process's dependencies.
func Default() Deps {
	d := Deps{
		In:                 os.Stdin,
		Out:                os.Stdout,
		ErrOut:             os.Stderr,
		Now:                time.Now,
		Getenv:             os.Getenv,
		Args:               os.Args[1:],
		Executable:         os.Executable,
		HomeDir:            os.UserHomeDir,
		NewConciergeClient: newConciergeClient,
		ExchangeToken: func(ctx context.Context, cfg conciergeclient.Config, token string) (*loginv1alpha1.ClusterCredential, error) {
			client, err := conciergeclient.New(cfg)
			if err != nil {
				return nil, err
			}
			return client.ExchangeToken(ctx, token)
		},
		OpenURL: oidclogin.OpenURL,
	}
	// Prompts go to stderr: stdout carries the ExecCredential.
	if p, ok := oidclogin.TerminalPrompter(os.Stdin, os.Stderr); ok {
		d.Prompter = p
	}
	return d
}

// ConciergeClient is the part of the Concierge's generated clientset the commands use; the
// clientset's fake implements it for tests.
type ConciergeClient interface {
	AuthenticationV1alpha1() authenticationclient.AuthenticationV1alpha1Interface
	ConfigV1alpha1() configclient.ConfigV1alpha1Interface
	IdentityV1alpha1() identityclient.IdentityV1alpha1Interface
}

// conciergeClient is made of the groups' typed clients rather than the clientset, whose discovery
// client links client-go's scheme of every built-in API: its initialisation would cost every
// kubectl call that runs the plugin several milliseconds.
type conciergeClient struct {
	authentication *authenticationclient.AuthenticationV1alpha1Client
	config         *configclient.ConfigV1alpha1Client
	identity       *identityclient.IdentityV1alpha1Client
}

func newConciergeClient(cfg *rest.Config) (ConciergeClient, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(tracing.Transport)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	var c conciergeClient
	if c.authentication, err = authenticationclient.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, err
	}
	if c.config, err = configclient.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, err
	}
	if c.identity, err = identityclient.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, err
	}
	return c, nil
}

func (c conciergeClient) AuthenticationV1alpha1() authenticationclient.AuthenticationV1alpha1Interface {
	return c.authentication
}
func (c conciergeClient) ConfigV1alpha1() configclient.ConfigV1alpha1Interface { return c.config }
func (c conciergeClient) IdentityV1alpha1() identityclient.IdentityV1alpha1Interface {
	return c.identity
}
