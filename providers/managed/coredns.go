package managed

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

const (
	dnsNamespace  = "kube-system"
	dnsDeployment = "coredns"
	dnsService    = "kube-dns"
)

// corefile is the CoreDNS configuration kubeadm installs: cluster names from the API, the rest
// forwarded to the node's resolvers.
const corefile = `.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes ` + clusterDomain + ` in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30
    loop
    reload
    loadbalance
}
`

// installCoreDNS creates cluster DNS as a managed cluster ships it: a Deployment behind the
// kube-dns Service at the address the kubelet hands to pods.
func installCoreDNS(ctx context.Context, client kubernetes.Interface, image string) error {
	labels := map[string]string{"k8s-app": "kube-dns"}
	meta := metav1.ObjectMeta{Name: dnsDeployment, Namespace: dnsNamespace}
	create := func(what string, err error) error {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the CoreDNS %s: %w", what, err)
		}
		return nil
	}
	if err := create("ServiceAccount", op(client.CoreV1().ServiceAccounts(dnsNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{}))); err != nil {
		return err
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	if err := create("ClusterRole", op(client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}))); err != nil {
		return err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: dnsDeployment, Namespace: dnsNamespace}},
	}
	if err := create("ClusterRoleBinding", op(client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}))); err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"Corefile": corefile}}
	if err := create("ConfigMap", op(client.CoreV1().ConfigMaps(dnsNamespace).Create(ctx, cm, metav1.CreateOptions{}))); err != nil {
		return err
	}
	if err := create("Deployment", op(client.AppsV1().Deployments(dnsNamespace).Create(ctx, coreDNSDeployment(image, labels), metav1.CreateOptions{}))); err != nil {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: dnsService, Namespace: dnsNamespace, Labels: labels},
		Spec: corev1.ServiceSpec{
			Selector:  labels,
			ClusterIP: dnsServiceIP,
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
				{Name: "metrics", Port: 9153, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9153)},
			},
		},
	}
	return create("Service", op(client.CoreV1().Services(dnsNamespace).Create(ctx, svc, metav1.CreateOptions{})))
}

// op drops the object a create call returns, keeping its error.
func op[T any](_ T, err error) error { return err }

func coreDNSDeployment(image string, labels map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: dnsDeployment, Namespace: dnsNamespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1), // one node: a second replica would only share its fate
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: dnsDeployment,
					PriorityClassName:  "system-cluster-critical",
					DNSPolicy:          corev1.DNSDefault,
					Tolerations:        []corev1.Toleration{{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{
						Name:            "coredns",
						Image:           image,
						ImagePullPolicy: corev1.PullNever,
						Args:            []string{"-conf", "/etc/coredns/Corefile"},
						Ports: []corev1.ContainerPort{
							{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
							{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
							{Name: "metrics", ContainerPort: 9153, Protocol: corev1.ProtocolTCP},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "config-volume", MountPath: "/etc/coredns", ReadOnly: true}},
						LivenessProbe: &corev1.Probe{
							ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8080)}},
							PeriodSeconds:    10,
							FailureThreshold: 5,
						},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8181)}},
							PeriodSeconds: 1,
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities: &corev1.Capabilities{
								Add:  []corev1.Capability{"NET_BIND_SERVICE"},
								Drop: []corev1.Capability{"ALL"},
							},
						},
					}},
					Volumes: []corev1.Volume{{
						Name: "config-volume",
						VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: dnsDeployment},
						}},
					}},
				},
			},
		},
	}
}
