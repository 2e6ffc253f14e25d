package kubecertagent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	// AgentLabelKey and AgentLabelValue select the agent's pods. The value changes whenever the
	// Deployment changes incompatibly: its selector cannot be updated, so the controller replaces
	// a Deployment whose selector differs.
	AgentLabelKey   = "kube-cert-agent.pinniped.dev"
	AgentLabelValue = "v3"

	// ContainerName is the agent's only container, the one the Concierge execs into.
	ContainerName = "sleeper"
	// AgentCommand is the agent binary, looked up on the image's PATH.
	AgentCommand = "pinniped-concierge-kube-cert-agent"

	// specHashAnnotation records the desired spec the Deployment was last written from, so that
	// changes the API server's defaulting would hide (such as a removed volume) still update it.
	specHashAnnotation = "kube-cert-agent.pinniped.dev/spec-hash"

	// ControllerManagerNamespace and ControllerManagerLabel find kube-controller-manager pods, as
	// kubeadm and most self-managed installers label them.
	ControllerManagerNamespace = "kube-system"
	ControllerManagerLabel     = "component=kube-controller-manager"

	// Where kube-controller-manager's signing pair is when its flags do not say (its defaults).
	defaultCertPath = "/etc/kubernetes/ca/ca.pem"
	defaultKeyPath  = "/etc/kubernetes/ca/ca.key"
)

// Flags naming the signing pair; each pair of flags is mutually exclusive in kube-controller-manager.
var (
	certFlags = []string{"--cluster-signing-cert-file", "--cluster-signing-kube-apiserver-client-cert-file"}
	keyFlags  = []string{"--cluster-signing-key-file", "--cluster-signing-kube-apiserver-client-key-file"}
)

// signingPaths returns where the kube-controller-manager container reads its signing pair, from
// its command line or, when the flags are absent, kube-controller-manager's defaults.
func signingPaths(kcm *corev1.Container) (certPath, keyPath string) {
	args := slices.Concat(kcm.Command, kcm.Args)
	return flagValue(args, certFlags, defaultCertPath), flagValue(args, keyFlags, defaultKeyPath)
}

// flagValue returns the value of the last of names given in args ("--name=value" or
// "--name value"), or fallback.
func flagValue(args, names []string, fallback string) string {
	value := ""
	for i, arg := range args {
		for _, name := range names {
			if v, ok := strings.CutPrefix(arg, name+"="); ok {
				value = v
			} else if arg == name && i+1 < len(args) {
				value = args[i+1]
			}
		}
	}
	if value == "" {
		return fallback
	}
	return value
}

// newDeployment returns the agent Deployment for the kube-controller-manager pod kcm: one pod on
// kcm's node that mounts what kcm mounts, runs as root (the signing key is usually readable by root
// only), and sleeps until the Concierge execs `print` in it.
func newDeployment(s Config, image string, kcm *corev1.Pod) *appsv1.Deployment {
	certPath, keyPath := defaultCertPath, defaultKeyPath
	var mounts []corev1.VolumeMount
	if len(kcm.Spec.Containers) > 0 {
		certPath, keyPath = signingPaths(&kcm.Spec.Containers[0])
		// The agent only reads.
		for _, m := range kcm.Spec.Containers[0].VolumeMounts {
			m.ReadOnly = true
			mounts = append(mounts, m)
		}
	}
	var pullSecrets []corev1.LocalObjectReference
	for _, name := range s.ImagePullSecrets {
		pullSecrets = append(pullSecrets, corev1.LocalObjectReference{Name: name})
	}
	// The Concierge's labels, except app: Services and policies that select the Concierge's pods
	// by their app label must not catch the agent.
	podLabels := maps.Clone(s.Labels)
	if podLabels == nil {
		podLabels = map[string]string{}
	}
	delete(podLabels, "app")
	podLabels[AgentLabelKey] = AgentLabelValue

	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:      s.DeploymentName,
			Namespace: s.Namespace,
			Labels:    maps.Clone(s.Labels),
		},
		Spec: appsv1.DeploymentSpec{
			Replicas:        ptr.To[int32](1),
			MinReadySeconds: 10,
			Strategy:        appsv1.DeploymentStrategy{Type: s.DeploymentStrategy},
			Selector:        &metav1.LabelSelector{MatchLabels: map[string]string{AgentLabelKey: AgentLabelValue}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:            ContainerName,
						Image:           image,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Command:         []string{AgentCommand, "sleep"},
						Env: []corev1.EnvVar{
							{Name: "CERT_PATH", Value: certPath},
							{Name: "KEY_PATH", Value: keyPath},
						},
						VolumeMounts: mounts,
						Resources: corev1.ResourceRequirements{
							Limits: corev1.ResourceList{
								corev1.ResourceMemory: resource.MustParse("32Mi"),
								corev1.ResourceCPU:    resource.MustParse("20m"),
							},
							// An explicit zero CPU request: left out, it would default to the limit
							// and reserve CPU on the control-plane node for a process that sleeps.
							Requests: corev1.ResourceList{
								corev1.ResourceMemory: resource.MustParse("32Mi"),
								corev1.ResourceCPU:    resource.MustParse("0"),
							},
						},
					}},
					NodeName:                      kcm.Spec.NodeName,
					NodeSelector:                  kcm.Spec.NodeSelector,
					Tolerations:                   kcm.Spec.Tolerations,
					HostNetwork:                   kcm.Spec.HostNetwork,
					Volumes:                       kcm.Spec.Volumes,
					ServiceAccountName:            s.ServiceAccountName,
					AutomountServiceAccountToken:  ptr.To(false),
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsUser:  ptr.To(ptr.Deref(s.RunAsUser, 0)),
						RunAsGroup: ptr.To(ptr.Deref(s.RunAsGroup, 0)),
					},
					ImagePullSecrets:  pullSecrets,
					PriorityClassName: s.PriorityClassName,
				},
			},
		},
	}
	d.Annotations = map[string]string{specHashAnnotation: specHash(d)}
	return d
}

// specHash identifies what newDeployment produced (its labels and spec).
func specHash(d *appsv1.Deployment) string {
	data, err := json.Marshal([]any{d.Labels, d.Spec})
	if err != nil {
		panic(fmt.Sprintf("encoding a Deployment: %v", err)) // plain structs always encode
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
