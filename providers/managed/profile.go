package managed

import (
	"fmt"
	"slices"
	"strings"

	"sealion.dev/providers"
	"sealion.dev/providers/managed/loadbalancer"
)

// profile is what one simulated cloud changes: how its API server authenticates, how its load
// balancers publish addresses, and how its worker node is named and labelled.
type profile struct {
	name string
	// anonymousAuth is kube-apiserver's --anonymous-auth: on in GKE and EKS, off in AKS.
	anonymousAuth bool
	// lbMode is how LoadBalancer Services publish their address: an IP on GKE and AKS, an ELB
	// hostname on EKS.
	lbMode loadbalancer.Mode
	// nodeName builds the worker Node's name from the cluster name.
	nodeName func(cluster string) string
	// nodeLabels are the labels the provider's node pools carry.
	nodeLabels map[string]string
}

var profiles = []profile{
	{
		name:          "gke",
		anonymousAuth: true,
		lbMode:        loadbalancer.ModeIP,
		nodeName:      func(c string) string { return "gke-" + c + "-default-pool-0" },
		nodeLabels:    map[string]string{"cloud.google.com/gke-nodepool": "default-pool"},
	},
	{
		name:          "eks",
		anonymousAuth: true,
		lbMode:        loadbalancer.ModeHostname,
		nodeName:      func(c string) string { return "eks-" + c + "-ng-0" },
		nodeLabels:    map[string]string{"eks.amazonaws.com/nodegroup": "ng-0"},
	},
	{
		name:          "aks",
		anonymousAuth: false,
		lbMode:        loadbalancer.ModeIP,
		nodeName:      func(c string) string { return "aks-" + c + "-nodepool1-0" },
		nodeLabels:    map[string]string{"kubernetes.azure.com/agentpool": "nodepool1"},
	},
}

// Profiles lists the names New accepts.
func Profiles() []string {
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = p.name
	}
	return names
}

func lookupProfile(name string) (profile, error) {
	i := slices.IndexFunc(profiles, func(p profile) bool { return p.name == name })
	if i < 0 {
		return profile{}, fmt.Errorf("managed: unknown profile %q (want one of %s)", name, strings.Join(Profiles(), ", "))
	}
	return profiles[i], nil
}

// capabilities are the same for every profile except anonymous authentication.
func (p profile) capabilities() providers.Capabilities {
	return providers.Capabilities{
		ChangesHost:                true,
		ImagesLoadable:             true,
		ControlPlaneVisible:        false,
		KubeControllerManagerPod:   false,
		ClusterSigningKeyAvailable: false,
		HasExternalLoadBalancer:    true,
		AnonymousAuthEnabled:       p.anonymousAuth,
	}
}
