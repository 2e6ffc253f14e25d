package managed

import (
	"fmt"
	"slices"
	"strings"

	"sealion.dev/providers"
	"sealion.dev/providers/managed/loadbalancer"
)

// profile is what one simulated distribution changes: how its API server authenticates, how
// traffic reaches the cluster from outside, and how its node is named and labelled.
type profile struct {
	name string
	// anonymousAuth is kube-apiserver's --anonymous-auth: on in GKE and EKS, off in AKS and Talos.
	anonymousAuth bool
	// noAPIServerClientSigner leaves kube-controller-manager without a signer for
	// kubernetes.io/kube-apiserver-client, as on EKS, whose CA signs no such certificates: an
	// approved request for it is never issued.
	noAPIServerClientSigner bool
	// lbMode is how LoadBalancer Services publish their address: an IP on GKE and AKS, an ELB
	// hostname on EKS; empty where no cloud load balancer exists (Services of that type pend).
	lbMode loadbalancer.Mode
	// ingressPassthrough runs the Ingress controller of package ingress, which routes TLS by
	// server name to ClusterIP Services, as ingress-nginx with ssl-passthrough does on a homelab
	// Talos cluster.
	ingressPassthrough bool
	// controlPlaneNode labels the node as a control plane once it registers, as Talos does to
	// its control-plane machines (the kubelet may not set node-role labels itself). Pods still
	// schedule there, as on a single-node Talos cluster that allows it.
	controlPlaneNode bool
	// nodeName builds the Node's name from the cluster name.
	nodeName func(cluster string) string
	// nodeLabels are the labels the kubelet registers the node with (a cloud's node pool labels).
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
		name:                    "eks",
		anonymousAuth:           true,
		noAPIServerClientSigner: true,
		lbMode:                  loadbalancer.ModeHostname,
		nodeName:                func(c string) string { return "eks-" + c + "-ng-0" },
		nodeLabels:              map[string]string{"eks.amazonaws.com/nodegroup": "ng-0"},
	},
	{
		name:          "aks",
		anonymousAuth: false,
		lbMode:        loadbalancer.ModeIP,
		nodeName:      func(c string) string { return "aks-" + c + "-nodepool1-0" },
		nodeLabels:    map[string]string{"kubernetes.azure.com/agentpool": "nodepool1"},
	},
	{
		// A cluster bootstrapped as Talos does, without kubeadm: no kube-public/cluster-info, no
		// anonymous authentication, a control-plane node whose signing key no pod can reach, and
		// no cloud load balancer; what is exposed goes through an Ingress with TLS passthrough.
		name:               "talos-like",
		anonymousAuth:      false,
		ingressPassthrough: true,
		controlPlaneNode:   true,
		nodeName:           func(c string) string { return "talos-" + c + "-cp-1" },
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

// capabilities follow from the profile: the control plane itself always runs out of the
// cluster's reach.
func (p profile) capabilities() providers.Capabilities {
	return providers.Capabilities{
		ChangesHost:                true,
		ImagesLoadable:             true,
		ControlPlaneVisible:        p.controlPlaneNode,
		KubeControllerManagerPod:   false,
		ClusterSigningKeyAvailable: false,
		HasExternalLoadBalancer:    p.lbMode != "",
		IngressTLSPassthrough:      p.ingressPassthrough,
		AnonymousAuthEnabled:       p.anonymousAuth,
		KubeAPIServerClientSigner:  !p.noAPIServerClientSigner,
	}
}
