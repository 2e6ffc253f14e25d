// Package clientconfig loads the user's kubeconfig the way kubectl does (--kubeconfig, then
// $KUBECONFIG, then ~/.kube/config) and resolves the context the pinniped commands act on.
package clientconfig

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"sealion.dev/core/groupsuffix"
)

// Loaded is a kubeconfig with its selected context resolved.
type Loaded struct {
	// Raw is the whole merged kubeconfig.
	Raw *clientcmdapi.Config
	// ContextName, Context and Cluster are the selected context and the cluster it names.
	ContextName string
	Context     *clientcmdapi.Context
	Cluster     *clientcmdapi.Cluster
	// REST is the client config for the selected context.
	REST *rest.Config
}

// Load reads the kubeconfig at path (or kubectl's defaults when empty) and selects contextName
// (or the current context when empty).
func Load(path, contextName string) (*Loaded, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: contextName})
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	name := contextName
	if name == "" {
		name = raw.CurrentContext
	}
	ctx, ok := raw.Contexts[name]
	if !ok {
		if name == "" {
			return nil, fmt.Errorf("the kubeconfig has no current context")
		}
		return nil, fmt.Errorf("the kubeconfig has no context %q", name)
	}
	cluster, ok := raw.Clusters[ctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("context %q names cluster %q, which the kubeconfig does not define", name, ctx.Cluster)
	}
	restCfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("building a client for context %q: %w", name, err)
	}
	return &Loaded{Raw: &raw, ContextName: name, Context: ctx, Cluster: cluster, REST: restCfg}, nil
}

// WithAPIGroupSuffix returns a copy of cfg whose requests use the Concierge API group suffix.
func WithAPIGroupSuffix(cfg *rest.Config, suffix string) (*rest.Config, error) {
	if err := groupsuffix.Validate(suffix); err != nil {
		return nil, fmt.Errorf("invalid API group suffix: %w", err)
	}
	out := rest.CopyConfig(cfg)
	out.Wrap(groupsuffix.Transport(suffix))
	return out, nil
}
