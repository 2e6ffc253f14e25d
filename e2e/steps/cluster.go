package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"sealion.dev/e2e/installation"
	"sealion.dev/fixtures/tunnel"
	"sealion.dev/providers"
)

// ActiveDirectoryHostOnly is why Active Directory logins are not tested on clusters of providers
// that do not run on this machine: the Samba domain controller runs here, in a network namespace
// of its own, and cannot be deployed into a cluster.
const ActiveDirectoryHostOnly = "cannot run here: Active Directory runs on the runner's host only"

// LDAPOutageHostOnly is why the upstream LDAP directory's outage is not tested on those clusters:
// the outage is a forwarder on this machine (e2e/outage) in front of a slapd here, which their
// pods (the Supervisor's) are not sure to reach. LDAP logins themselves run there, with slapd in
// the cluster (StartLDAPForCluster).
const LDAPOutageHostOnly = "cannot run here: the LDAP outage forwarder and its slapd run on the runner's host only"

// Cluster is the cluster a suite runs against.
type Cluster struct {
	Name     string
	Provider providers.Provider
	Info     providers.Info
	// Kubeconfig is an admin kubeconfig for the cluster.
	Kubeconfig string
	// CreateDuration is how long the provider took to bring the cluster up.
	CreateDuration time.Duration
	// Installation is the Concierge and Supervisor under test: ours until DiscoverInstallation
	// finds a user's.
	Installation installation.Installation

	mu     sync.Mutex
	tunnel *tunnel.Proxy
}

// Tunnel is the run's one proxy to servers in the cluster by their in-cluster names
// (fixtures/tunnel), so that Chromium and HTTPS_PROXY name one address however many such servers
// a test uses; made when first asked for and closed with the cluster (DeleteCluster).
func (c *Cluster) Tunnel() (*tunnel.Proxy, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tunnel == nil {
		p, err := tunnel.Listen()
		if err != nil {
			return nil, err
		}
		c.tunnel = p
	}
	return c.tunnel, nil
}

// closeTunnel closes the run's proxy, if one was made.
func (c *Cluster) closeTunnel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tunnel != nil {
		_ = c.tunnel.Close()
		c.tunnel = nil
	}
}

type clusterKey struct{}

// ClusterFrom returns the cluster that CreateCluster put in the context.
func ClusterFrom(ctx context.Context) *Cluster {
	c, _ := ctx.Value(clusterKey{}).(*Cluster)
	return c
}

// CreateCluster creates a cluster with p and points the environment's kubeconfig at it.
func CreateCluster(p providers.Provider, name string, opts providers.CreateOptions) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		start := time.Now()
		if err := p.Create(ctx, name, opts); err != nil {
			return ctx, err
		}
		c := &Cluster{Name: name, Provider: p, Info: p.Info(), CreateDuration: time.Since(start), Installation: installation.Ours()}
		path, err := p.KubeconfigPath(ctx, name)
		if err != nil {
			return ctx, fmt.Errorf("kubeconfig of cluster %s: %w", name, err)
		}
		c.Kubeconfig = path
		cfg.WithKubeconfigFile(path)
		fmt.Fprintf(os.Stderr, "e2e: %s cluster %q ready in %s\n", c.Info.Name, name, c.CreateDuration.Round(time.Second))
		return context.WithValue(ctx, clusterKey{}, c), nil
	}
}

// CollectLogs writes the cluster's component logs under dir/<cluster name>, for a report.
func CollectLogs(dir string) env.Func {
	return func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		c := ClusterFrom(ctx)
		if c == nil || dir == "" {
			return ctx, nil
		}
		return ctx, c.Provider.CollectLogs(ctx, c.Name, dir+"/"+c.Name)
	}
}

// DeleteCluster removes the cluster, reporting how long that took.
func DeleteCluster() env.Func {
	return func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		c := ClusterFrom(ctx)
		if c == nil {
			return ctx, nil
		}
		c.closeTunnel()
		start := time.Now()
		// Tear down even when the suite's context has ended.
		// e2e-framework logs failed finish steps only at high verbosity, so say it here.
		if err := c.Provider.Delete(context.WithoutCancel(ctx), c.Name); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: deleting %s cluster %q failed: %v\n", c.Info.Name, c.Name, err)
			return ctx, err
		}
		fmt.Fprintf(os.Stderr, "e2e: %s cluster %q deleted in %s\n", c.Info.Name, c.Name, time.Since(start).Round(time.Second))
		return ctx, nil
	}
}

// LoadImages loads image tarballs (docker archives, or the release's OCI layout) into the
// cluster's container runtime.
func LoadImages(archives ...string) env.Func {
	return func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		c := ClusterFrom(ctx)
		for _, a := range archives {
			if _, err := os.Stat(a); err != nil {
				return ctx, fmt.Errorf("image archive %s is missing (run make images release-check): %w", a, err)
			}
		}
		return ctx, c.Provider.LoadImageArchives(ctx, c.Name, archives...)
	}
}

// TestCluster creates the cluster name with p for a test that drives it itself, not through a
// suite's setup, and returns its kubeconfig. When the test ends the cluster is deleted, its
// logs collected first into $SEALION_E2E_LOGS/<name> when that is set. The version is
// $SEALION_E2E_KUBE_VERSION's, or the provider's default.
func TestCluster(ctx context.Context, t testing.TB, p providers.Provider, name string) string {
	t.Helper()
	t.Cleanup(func() {
		if logs := os.Getenv("SEALION_E2E_LOGS"); logs != "" {
			_ = p.CollectLogs(context.WithoutCancel(ctx), name, filepath.Join(logs, name))
		}
		if err := p.Delete(context.WithoutCancel(ctx), name); err != nil {
			t.Errorf("deleting the cluster: %v", err)
		}
	})
	if err := p.Create(ctx, name, providers.CreateOptions{KubernetesVersion: os.Getenv("SEALION_E2E_KUBE_VERSION")}); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := p.KubeconfigPath(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}
