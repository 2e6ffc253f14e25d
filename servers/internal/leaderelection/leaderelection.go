// Package leaderelection lets the replicas of a server's Deployment elect one of them, through a
// coordination.k8s.io Lease named after the Deployment, as the only one whose controllers write
// to the Kubernetes API.
//
// Every replica runs every controller, so that each fills the in-memory state it serves from
// (authenticators, signers, issuers, upstream connectors) from what it reads; only the writes of
// a replica that does not lead are refused, by the transport of the clients the controllers are
// given (Wrap), with ErrNotLeader. Reads pass, and so do the creates that are questions rather
// than writes: token and access reviews, and exec into a pod (how the kube cert agent's key is
// read). Requests a replica serves for its clients (OAuth sessions, proxied requests) are not
// the controllers' and use clients that are not wrapped, as does the Lease's own client.
// A refused write fails its controller's sync, which core/controller retries with a backoff
// growing to two minutes, besides its resync every minute: a replica that does not lead does not
// spin, and one that comes to lead catches up within a resync.
//
// A replica that loses the Lease stops writing at once and campaigns again, rather than exiting
// to restart clean: its controllers are level-triggered and its caches are filled from reads on
// every replica alike, so there is nothing a restart would clean, while it would cut the
// requests the replica is serving and empty its caches for a while. Leadership ends, in client-go,
// when the Lease could not be renewed for RenewDeadline, which is shorter than LeaseDuration: the
// old leader stops writing before another replica may take the Lease.
package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// The timing of the election by default, that of Pinniped: a crashed leader is replaced within
// LeaseDuration, and a leader that cannot reach the API server stops writing after RenewDeadline.
const (
	DefaultLeaseDuration = 137 * time.Second
	DefaultRenewDeadline = 107 * time.Second
	DefaultRetryPeriod   = 26 * time.Second
)

// ErrNotLeader is the error of a write refused because this replica does not hold the Lease.
var ErrNotLeader = errors.New("not the leader: only the replica holding the Lease writes to the Kubernetes API")

// Config describes the election. Namespace, Name and Identity are required; zero durations take
// the defaults.
type Config struct {
	// Namespace and Name are the Lease's: the server's namespace and its Deployment's name.
	Namespace, Name string
	// Identity is this replica's name in the Lease: its pod's name (see Identity).
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's leaderelection settings.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Identity is the pod's name when it is known (POD_NAME, from the downward API), otherwise the
// host name, which is the pod's name in a pod too.
func Identity(podName string) (string, error) {
	if podName != "" {
		return podName, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("leader election: no pod name is set (POD_NAME) and the host name is unknown: %w", err)
	}
	return host, nil
}

// Elector takes part in the election and gates the writes of the clients it wraps.
type Elector struct {
	config leaderelection.LeaderElectionConfig

	mu      sync.Mutex
	leading bool
}

// New checks cfg and returns an elector that campaigns through leases once Run is called; until
// then, and whenever it does not hold the Lease, the clients it wraps do not write.
func New(cfg Config, leases coordinationv1client.LeasesGetter) (*Elector, error) {
	var missing []string
	for _, f := range []struct{ name, value string }{{"namespace", cfg.Namespace}, {"name", cfg.Name}, {"identity", cfg.Identity}} {
		if f.value == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("leader election: the Lease's %v must be set", missing)
	}
	for field, def := range map[*time.Duration]time.Duration{
		&cfg.LeaseDuration: DefaultLeaseDuration,
		&cfg.RenewDeadline: DefaultRenewDeadline,
		&cfg.RetryPeriod:   DefaultRetryPeriod,
	} {
		if *field == 0 {
			*field = def
		}
	}
	e := &Elector{}
	e.config = leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Name},
			Client:     leases,
			LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
		},
		LeaseDuration: cfg.LeaseDuration,
		RenewDeadline: cfg.RenewDeadline,
		RetryPeriod:   cfg.RetryPeriod,
		// A replica shutting down hands the Lease over at once rather than after LeaseDuration.
		ReleaseOnCancel: true,
		Name:            cfg.Namespace + "/" + cfg.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: e.startedLeading,
			OnStoppedLeading: e.stoppedLeading,
		},
	}
	// Checks the durations against each other, as Run would.
	if _, err := leaderelection.NewLeaderElector(e.config); err != nil {
		return nil, fmt.Errorf("leader election: %w", err)
	}
	return e, nil
}

// IsLeader reports whether this replica holds the Lease, so that its writes go through.
func (e *Elector) IsLeader() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading
}

// Run campaigns for the Lease until ctx ends, and then releases it if held. Losing the Lease
// stops the writes and starts a new campaign.
func (e *Elector) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("lease", e.config.Name, "identity", e.config.Lock.Identity())
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(e.config)
		if err != nil {
			// New checked the same configuration.
			logger.Error(err, "Leader election cannot run")
			return
		}
		le.Run(ctx)
		if ctx.Err() == nil {
			logger.Info("Lost the Lease: this replica's controllers stop writing until it leads again")
		}
	}
}

// startedLeading is called by client-go in a goroutine of its own once the Lease is acquired;
// ctx ends when leadership does, which may be before this runs.
func (e *Elector) startedLeading(ctx context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	// stoppedLeading runs after ctx ends: it has run already, or it will run after this.
	if ctx.Err() == nil {
		e.leading = true
		klog.FromContext(ctx).Info("Leading: this replica's controllers write", "lease", e.config.Name)
	}
}

// stoppedLeading is called by client-go when Run returns, whether it led or not.
func (e *Elector) stoppedLeading() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leading = false
}

// ForPod builds the election among the replicas of the Deployment deploymentName in namespace, as
// the pod podName (see Identity). The Lease is written with a client of its own, made from
// restConfig: the one client that writes whether this replica leads or not.
func ForPod(restConfig *rest.Config, namespace, deploymentName, podName string) (*Elector, error) {
	identity, err := Identity(podName)
	if err != nil {
		return nil, err
	}
	leases, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	return New(Config{Namespace: namespace, Name: deploymentName, Identity: identity}, leases.CoordinationV1())
}
