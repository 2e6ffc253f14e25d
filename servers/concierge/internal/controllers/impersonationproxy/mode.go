package impersonationproxy

import (
	corev1 "k8s.io/api/core/v1"
)

// Node labels by which a node shows that it runs the control plane.
var controlPlaneRoleLabels = []string{"node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master"}

const nodeRoleLabel = "kubernetes.io/node-role"

// controlPlaneVisible reports whether any node is a control-plane node. Where none is, as on
// GKE, EKS and AKS, the control plane runs outside the cluster, its signing key is out of reach,
// and mode auto turns the impersonation proxy on.
func controlPlaneVisible(nodes []corev1.Node) bool {
	for _, n := range nodes {
		for _, l := range controlPlaneRoleLabels {
			if _, ok := n.Labels[l]; ok {
				return true
			}
		}
		if role := n.Labels[nodeRoleLabel]; role == "control-plane" || role == "master" {
			return true
		}
	}
	return false
}
