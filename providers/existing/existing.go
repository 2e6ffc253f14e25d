// Package existing is the provider of a cluster that runs already, given by a kubeconfig: a
// developer's cluster, a cloud cluster made by other tooling, or one made by another provider.
// Create only checks that the API server answers, Delete leaves the cluster alone, and images
// cannot be loaded into its runtime: tests must use images the cluster can pull.
package existing

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"sealion.dev/providers"
	"sealion.dev/providers/internal/clusterlogs"
)

// Name is the provider's name in Info.
const Name = "existing"

const reachTimeout = 30 * time.Second

// Options describe the cluster.
type Options struct {
	// KubeconfigPath is an admin kubeconfig of the cluster (its current context is used).
	KubeconfigPath string
	// Capabilities are what the caller knows about the cluster; they cannot be discovered
	// reliably from outside. ChangesHost and ImagesLoadable are always false.
	Capabilities providers.Capabilities
	// ImagesPullable says the images tests use are in a registry the cluster pulls from, so
	// LoadImageArchives has nothing to do and succeeds.
	ImagesPullable bool
}

// New returns a provider for the cluster of opts.KubeconfigPath.
func New(opts Options) providers.Provider {
	opts.Capabilities.ChangesHost = false
	opts.Capabilities.ImagesLoadable = false
	return &provider{opts: opts}
}

var _ providers.Provider = (*provider)(nil)

type provider struct{ opts Options }

// Info is part of the providers.Provider interface.
func (p *provider) Info() providers.Info {
	return providers.Info{Name: Name, Capabilities: p.opts.Capabilities}
}

// Create is part of the providers.Provider interface: it checks the API server answers.
func (p *provider) Create(ctx context.Context, name string, _ providers.CreateOptions) error {
	client, err := p.client()
	if err != nil {
		return &providers.StepError{Cluster: name, Step: "load kubeconfig", Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	if _, err := client.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw(); err != nil {
		return &providers.StepError{Cluster: name, Step: "reach the API server",
			Err: fmt.Errorf("cluster of kubeconfig %s does not answer: %w", p.opts.KubeconfigPath, err)}
	}
	return nil
}

func (p *provider) client() (kubernetes.Interface, error) {
	if p.opts.KubeconfigPath == "" {
		return nil, fmt.Errorf("the existing provider needs a kubeconfig path")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", p.opts.KubeconfigPath)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", p.opts.KubeconfigPath, err)
	}
	cfg.Timeout = reachTimeout
	return kubernetes.NewForConfig(cfg)
}

// KubeconfigPath is part of the providers.Provider interface.
func (p *provider) KubeconfigPath(context.Context, string) (string, error) {
	if p.opts.KubeconfigPath == "" {
		return "", fmt.Errorf("the existing provider needs a kubeconfig path")
	}
	return filepath.Abs(p.opts.KubeconfigPath)
}

// LoadImageArchives is part of the providers.Provider interface. It succeeds without doing
// anything when the images are pullable, and fails otherwise.
func (p *provider) LoadImageArchives(_ context.Context, name string, archives ...string) error {
	if p.opts.ImagesPullable || len(archives) == 0 {
		return nil
	}
	return fmt.Errorf("loading %d image archive(s) into existing cluster %q: %w; push the images to a registry "+
		"the cluster can pull from and mark them pullable", len(archives), name, providers.ErrImageLoadUnsupported)
}

// CollectLogs is part of the providers.Provider interface: what the API server reports.
func (p *provider) CollectLogs(ctx context.Context, _ string, dir string) error {
	client, err := p.client()
	if err != nil {
		return err
	}
	return clusterlogs.Dump(ctx, client, dir)
}

// Delete is part of the providers.Provider interface: the cluster is not ours to delete.
func (p *provider) Delete(context.Context, string) error { return nil }
