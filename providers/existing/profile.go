package existing

import (
	"fmt"
	"slices"
	"strings"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	"sealion.dev/providers"
)

// ProfileEnv names the variable that says what kind of cluster the kubeconfig points at, for the
// e2e suites and the matrix alike; empty means GenericProfile.
const ProfileEnv = "SEALION_EXISTING_PROFILE"

// GenericProfile is the profile of a cluster nothing is known about: the caller's Capabilities
// stand, and no strategy is expected.
const GenericProfile = "generic"

// Profile is what a kind of cluster is known to do, from outside: the facts Pinniped's own test
// setup records per distribution (test/cluster_capabilities), which cannot be probed reliably
// without installing the Concierge first.
type Profile struct {
	Name string
	// signingKeyReachable: kube-controller-manager runs as a pod on a node the cluster schedules
	// on, so the kube cert agent can read the cluster's signing key (kind, kubeadm, TKGS).
	signingKeyReachable bool
	// loadBalancer: Services of type LoadBalancer get an external address.
	loadBalancer bool
	// noAPIServerClientSigner: the provider signs no kubernetes.io/kube-apiserver-client
	// certificates (EKS: its CA signs only its own signers' requests).
	noAPIServerClientSigner bool
	// anonymousAuth says, per Kubernetes minor (1.x), whether the API server accepts anonymous
	// requests as the provider sets it up by default.
	anonymousAuth func(minor int) bool
}

func always(int) bool { return true }
func never(int) bool  { return false }

// before is on for minors below first and off from first on.
func before(first int) func(int) bool { return func(minor int) bool { return minor < first } }

var profiles = []Profile{
	{Name: "kind", signingKeyReachable: true, anonymousAuth: always},
	{Name: "kubeadm", signingKeyReachable: true, anonymousAuth: always},
	// vSphere with Tanzu needs a load balancer (NSX or HAProxy/Avi) for its guest clusters.
	{Name: "tkgs", signingKeyReachable: true, loadBalancer: true, anonymousAuth: always},
	{Name: "eks", loadBalancer: true, noAPIServerClientSigner: true, anonymousAuth: before(32)},
	{Name: "gke", loadBalancer: true, anonymousAuth: before(35)},
	{Name: "aks", loadBalancer: true, anonymousAuth: never},
	{Name: GenericProfile},
}

// ProfileNames lists the profiles LookupProfile knows.
func ProfileNames() []string {
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = p.Name
	}
	return names
}

// LookupProfile returns the named profile; "" is GenericProfile.
func LookupProfile(name string) (Profile, error) {
	if name == "" {
		name = GenericProfile
	}
	i := slices.IndexFunc(profiles, func(p Profile) bool { return p.Name == name })
	if i < 0 {
		return Profile{}, fmt.Errorf("unknown existing-cluster profile %q (%s takes one of %s)",
			name, ProfileEnv, strings.Join(ProfileNames(), ", "))
	}
	return profiles[i], nil
}

// Generic reports whether the profile knows nothing of the cluster.
func (p Profile) Generic() bool { return p.anonymousAuth == nil }

// Strategy is the CredentialIssuer strategy the Concierge is expected to succeed with: the kube
// cert agent's where the signing key is reachable, else the impersonation proxy; empty for the
// generic profile.
func (p Profile) Strategy() string {
	switch {
	case p.Generic():
		return ""
	case p.signingKeyReachable:
		return string(configv1alpha1.StrategyTypeKubeClusterSigningCertificate)
	default:
		return string(configv1alpha1.StrategyTypeImpersonationProxy)
	}
}

// Capabilities are what tests may assume of a cluster of the profile at Kubernetes 1.minor;
// minor 0 (not yet known) reports anonymous authentication off, the assumption that asks least.
// The generic profile returns given unchanged. Images are never loadable into such a cluster,
// and nothing of this machine changes.
func (p Profile) Capabilities(minor int, given providers.Capabilities) providers.Capabilities {
	c := given
	if !p.Generic() {
		c = providers.Capabilities{
			ControlPlaneVisible:        p.signingKeyReachable,
			KubeControllerManagerPod:   p.signingKeyReachable,
			ClusterSigningKeyAvailable: p.signingKeyReachable,
			HasExternalLoadBalancer:    p.loadBalancer,
			AnonymousAuthEnabled:       minor > 0 && p.anonymousAuth(minor),
			KubeAPIServerClientSigner:  !p.noAPIServerClientSigner,
		}
	}
	c.ChangesHost = false
	c.ImagesLoadable = false
	return c
}
