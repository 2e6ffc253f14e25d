package root

import (
	"io"
	"strings"
	"testing"

	"sealion.dev/cli/internal/deps"
)

// upstreamFlag is a flag of Pinniped's own CLI that scripts and kubeconfigs may pass to ours.
type upstreamFlag struct {
	name, shorthand string
	hidden          bool
	deprecated      bool
}

// TestUpstreamFlags checks that every command defines each flag of its upstream counterpart, with
// the same shorthand, hidden where upstream hides it, so that no upstream command line is refused.
func TestUpstreamFlags(t *testing.T) {
	visible := func(names ...string) []upstreamFlag {
		var fs []upstreamFlag
		for _, n := range names {
			fs = append(fs, upstreamFlag{name: n})
		}
		return fs
	}
	conciergeLogin := []string{"enable-concierge", "concierge-authenticator-type", "concierge-authenticator-name",
		"concierge-endpoint", "concierge-ca-bundle-data", "concierge-api-group-suffix", "credential-cache"}
	tests := []struct {
		path  []string
		flags []upstreamFlag
	}{
		{
			path: []string{"get", "kubeconfig"},
			flags: append(visible("kubeconfig", "kubeconfig-context", "generated-name-suffix", "timeout", "skip-validation",
				"static-token", "static-token-env", "no-concierge", "concierge-credential-issuer", "concierge-authenticator-type",
				"concierge-authenticator-name", "concierge-api-group-suffix", "concierge-mode", "concierge-endpoint",
				"concierge-ca-bundle", "concierge-skip-wait", "oidc-issuer", "oidc-request-audience", "oidc-ca-bundle",
				"oidc-client-id", "oidc-scopes", "oidc-listen-port", "oidc-skip-browser", "oidc-session-cache",
				"upstream-identity-provider-name", "upstream-identity-provider-type", "upstream-identity-provider-flow",
				"credential-cache", "pinniped-cli-path", "install-hint"),
				upstreamFlag{name: "output", shorthand: "o"},
				upstreamFlag{name: "oidc-skip-listen", hidden: true},
				upstreamFlag{name: "oidc-debug-session-cache", hidden: true},
				upstreamFlag{name: "concierge-namespace", hidden: true, deprecated: true},
			),
		},
		{
			path: []string{"login", "oidc"},
			flags: append(visible(append([]string{"issuer", "client-id", "listen-port", "scopes", "skip-browser", "session-cache",
				"ca-bundle", "ca-bundle-data", "request-audience", "upstream-identity-provider-name",
				"upstream-identity-provider-type", "upstream-identity-provider-flow"}, conciergeLogin...)...),
				upstreamFlag{name: "skip-listen", hidden: true},
				upstreamFlag{name: "debug-session-cache", hidden: true},
			),
		},
		{path: []string{"login", "static"}, flags: visible(append([]string{"token", "token-env"}, conciergeLogin...)...)},
		{
			path: []string{"whoami"},
			flags: append(visible("kubeconfig", "kubeconfig-context", "api-group-suffix", "timeout"),
				upstreamFlag{name: "output", shorthand: "o"}),
		},
		{path: []string{"version"}, flags: []upstreamFlag{{name: "output", shorthand: "o"}}},
	}
	root := NewCommand(deps.Deps{Out: io.Discard, ErrOut: io.Discard})
	for _, tt := range tests {
		cmd, _, err := root.Find(tt.path)
		if err != nil {
			t.Fatalf("command %q: %v", strings.Join(tt.path, " "), err)
		}
		for _, want := range tt.flags {
			t.Run(strings.Join(tt.path, "_")+"/"+want.name, func(t *testing.T) {
				got := cmd.Flags().Lookup(want.name)
				if got == nil {
					t.Fatal("flag not defined")
				}
				if got.Shorthand != want.shorthand {
					t.Errorf("shorthand %q, want %q", got.Shorthand, want.shorthand)
				}
				if got.Hidden != want.hidden {
					t.Errorf("hidden = %v, want %v", got.Hidden, want.hidden)
				}
				if (got.Deprecated != "") != want.deprecated {
					t.Errorf("deprecation message %q, want deprecated = %v", got.Deprecated, want.deprecated)
				}
			})
		}
	}
}
