// Package clientconfig loads the user's kubeconfig the way kubectl does (--kubeconfig, then
// $KUBECONFIG, then ~/.kube/config) and resolves the context the pinniped commands act on.
package clientconfig

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

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
	// The files read, for the messages: the user must know which kubeconfig was meant.
	files := rules.GetLoadingPrecedence()
	if path != "" {
		files = []string{path}
	}
	where := strings.Join(files, ", ")
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: contextName})
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig %s: %w (pass --kubeconfig, or set $KUBECONFIG, to a readable kubeconfig)", where, err)
	}
	if len(raw.Contexts) == 0 {
		return nil, fmt.Errorf("no kubeconfig context found in %s: pass --kubeconfig, or set $KUBECONFIG, to the cluster's kubeconfig", where)
	}
	name := contextName
	if name == "" {
		name = raw.CurrentContext
	}
	// Checked before the lookup: client-go loads an entry without a name as the context "", which
	// no current-context selects.
	if name == "" {
		return nil, fmt.Errorf("the kubeconfig %s has no current context: choose one of %s with --kubeconfig-context", where, contextNames(raw))
	}
	ctx, ok := raw.Contexts[name]
	if !ok {
		return nil, fmt.Errorf("the kubeconfig %s has no context %q: it has %s", where, name, contextNames(raw))
	}
	cluster, ok := raw.Clusters[ctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("context %q names cluster %q, which the kubeconfig %s does not define", name, ctx.Cluster, where)
	}
	restCfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("building a client for context %q of the kubeconfig %s: %w", name, where, err)
	}
	return &Loaded{Raw: &raw, ContextName: name, Context: ctx, Cluster: cluster, REST: restCfg}, nil
}

// contextNames lists the kubeconfig's contexts, sorted and quoted.
func contextNames(raw clientcmdapi.Config) string {
	names := make([]string, 0, len(raw.Contexts))
	for n := range raw.Contexts {
		names = append(names, strconv.Quote(n))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
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
