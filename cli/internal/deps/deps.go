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
	conciergeclientset "sealion.dev/core/generated/concierge/clientset/versioned"
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

	// NewConciergeClientset builds a client for the Concierge's APIs from a rest config that
	// already carries the API group suffix transport.
	NewConciergeClientset func(*rest.Config) (conciergeclientset.Interface, error)
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
		In:         os.Stdin,
		Out:        os.Stdout,
		ErrOut:     os.Stderr,
		Now:        time.Now,
		Getenv:     os.Getenv,
		Args:       os.Args[1:],
		Executable: os.Executable,
		HomeDir:    os.UserHomeDir,
		NewConciergeClientset: func(cfg *rest.Config) (conciergeclientset.Interface, error) {
			return conciergeclientset.NewForConfig(cfg)
		},
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
