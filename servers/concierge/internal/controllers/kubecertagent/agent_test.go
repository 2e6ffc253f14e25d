package kubecertagent

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// kubeadmControllerManager is a kube-controller-manager static pod as kubeadm writes it (abridged).
func kubeadmControllerManager(name, node string, created metav1.Time) *corev1.Pod {
	hostPath := func(name, path string, t corev1.HostPathType) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: &t}}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "kube-system", UID: types.UID("uid-" + name), CreationTimestamp: created,
			Labels: map[string]string{"component": "kube-controller-manager", "tier": "control-plane"},
		},
		Spec: corev1.PodSpec{
			NodeName:          node,
			HostNetwork:       true,
			PriorityClassName: "system-node-critical",
			Tolerations:       []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
			Containers: []corev1.Container{{
				Name:  "kube-controller-manager",
				Image: "registry.k8s.io/kube-controller-manager:v1.33.13",
				Command: []string{
					"kube-controller-manager",
					"--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf",
					"--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt",
					"--cluster-signing-key-file=/etc/kubernetes/pki/ca.key",
					"--use-service-account-credentials=true",
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "ca-certs", MountPath: "/etc/ssl/certs", ReadOnly: true},
					{Name: "flexvolume-dir", MountPath: "/usr/libexec/kubernetes/kubelet-plugins/volume/exec"},
					{Name: "k8s-certs", MountPath: "/etc/kubernetes/pki", ReadOnly: true},
					{Name: "kubeconfig", MountPath: "/etc/kubernetes/controller-manager.conf", ReadOnly: true},
				},
			}},
			Volumes: []corev1.Volume{
				hostPath("ca-certs", "/etc/ssl/certs", corev1.HostPathDirectoryOrCreate),
				hostPath("flexvolume-dir", "/usr/libexec/kubernetes/kubelet-plugins/volume/exec", corev1.HostPathDirectoryOrCreate),
				hostPath("k8s-certs", "/etc/kubernetes/pki", corev1.HostPathDirectoryOrCreate),
				hostPath("kubeconfig", "/etc/kubernetes/controller-manager.conf", corev1.HostPathFileOrCreate),
			},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

var testConfig = Config{
	Namespace:          "concierge",
	DeploymentName:     "pinniped-concierge-kube-cert-agent",
	ServiceAccountName: "pinniped-concierge-kube-cert-agent",
	Image:              "example.com/pinniped-server:1",
	ImagePullSecrets:   []string{"pull"},
	PriorityClassName:  "agents",
	Labels:             map[string]string{"app": "pinniped-concierge", "team": "auth"},
}

func TestNewDeployment(t *testing.T) {
	kcm := kubeadmControllerManager("kube-controller-manager-cp", "cp", metav1.Now())
	got := newDeployment(testConfig, "example.com/pinniped-server:1", kcm)

	want := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name: "pinniped-concierge-kube-cert-agent", Namespace: "concierge",
			Labels:      map[string]string{"app": "pinniped-concierge", "team": "auth"},
			Annotations: map[string]string{specHashAnnotation: got.Annotations[specHashAnnotation]},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas:        ptr.To[int32](1),
			MinReadySeconds: 10,
			Selector:        &metav1.LabelSelector{MatchLabels: map[string]string{"kube-cert-agent.pinniped.dev": "v3"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "auth", "kube-cert-agent.pinniped.dev": "v3"}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:            "sleeper",
						Image:           "example.com/pinniped-server:1",
						ImagePullPolicy: corev1.PullIfNotPresent,
						Command:         []string{"pinniped-concierge-kube-cert-agent", "sleep"},
						Env: []corev1.EnvVar{
							{Name: "CERT_PATH", Value: "/etc/kubernetes/pki/ca.crt"},
							{Name: "KEY_PATH", Value: "/etc/kubernetes/pki/ca.key"},
						},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "ca-certs", MountPath: "/etc/ssl/certs", ReadOnly: true},
							{Name: "flexvolume-dir", MountPath: "/usr/libexec/kubernetes/kubelet-plugins/volume/exec", ReadOnly: true},
							{Name: "k8s-certs", MountPath: "/etc/kubernetes/pki", ReadOnly: true},
							{Name: "kubeconfig", MountPath: "/etc/kubernetes/controller-manager.conf", ReadOnly: true},
						},
						Resources: corev1.ResourceRequirements{
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi"), corev1.ResourceCPU: resource.MustParse("20m")},
							Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi"), corev1.ResourceCPU: resource.MustParse("0")},
						},
					}},
					NodeName:                      "cp",
					Tolerations:                   kcm.Spec.Tolerations,
					HostNetwork:                   true,
					Volumes:                       kcm.Spec.Volumes,
					ServiceAccountName:            "pinniped-concierge-kube-cert-agent",
					AutomountServiceAccountToken:  ptr.To(false),
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					SecurityContext:               &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0)},
					ImagePullSecrets:              []corev1.LocalObjectReference{{Name: "pull"}},
					PriorityClassName:             "agents",
				},
			},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Deployment (-want +got):\n%s", diff)
	}
	if len(got.Annotations[specHashAnnotation]) != 64 {
		t.Errorf("spec hash %q", got.Annotations[specHashAnnotation])
	}
	// The kube-controller-manager pod's own mounts are not changed.
	if kcm.Spec.Containers[0].VolumeMounts[1].ReadOnly {
		t.Error("newDeployment modified the kube-controller-manager pod")
	}

	// A different kube-controller-manager pod gives a different hash.
	kcm.Spec.Volumes = kcm.Spec.Volumes[:3]
	if other := newDeployment(testConfig, "example.com/pinniped-server:1", kcm); other.Annotations[specHashAnnotation] == got.Annotations[specHashAnnotation] {
		t.Error("the spec hash did not change with the volumes")
	}
}

// kubeCertAgent.runAsUser, runAsGroup and deploymentStrategyType reach the Deployment; unset,
// the agent runs as root and the strategy is the API's default.
func TestNewDeploymentSecurityAndStrategy(t *testing.T) {
	kcm := kubeadmControllerManager("kube-controller-manager-cp", "cp", metav1.Now())
	cfg := testConfig
	cfg.RunAsUser, cfg.RunAsGroup, cfg.DeploymentStrategy = ptr.To[int64](1001), ptr.To[int64](1002), appsv1.RecreateDeploymentStrategyType
	got := newDeployment(cfg, "example.com/pinniped-server:1", kcm)
	assert.Equal(t, &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1001), RunAsGroup: ptr.To[int64](1002)}, got.Spec.Template.Spec.SecurityContext)
	assert.Equal(t, appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}, got.Spec.Strategy)
	assert.NotEqual(t, newDeployment(testConfig, "example.com/pinniped-server:1", kcm).Annotations[specHashAnnotation], got.Annotations[specHashAnnotation])

	got = newDeployment(testConfig, "example.com/pinniped-server:1", kcm)
	assert.Equal(t, &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0)}, got.Spec.Template.Spec.SecurityContext)
	assert.Equal(t, appsv1.DeploymentStrategy{}, got.Spec.Strategy)
}

func TestSigningPaths(t *testing.T) {
	tests := []struct {
		name              string
		command, args     []string
		wantCert, wantKey string
	}{
		{
			name:     "kubeadm flags with =",
			command:  []string{"kube-controller-manager", "--cluster-signing-cert-file=/pki/ca.crt", "--cluster-signing-key-file=/pki/ca.key"},
			wantCert: "/pki/ca.crt", wantKey: "/pki/ca.key",
		},
		{
			name:     "flags as separate arguments, in args",
			command:  []string{"kube-controller-manager"},
			args:     []string{"--v=2", "--cluster-signing-cert-file", "/a/cert", "--cluster-signing-key-file", "/a/key"},
			wantCert: "/a/cert", wantKey: "/a/key",
		},
		{
			name:     "kube-apiserver-client signer flags",
			command:  []string{"kube-controller-manager", "--cluster-signing-kube-apiserver-client-cert-file=/c/cert", "--cluster-signing-kube-apiserver-client-key-file=/c/key"},
			wantCert: "/c/cert", wantKey: "/c/key",
		},
		{
			name:     "the last occurrence wins",
			command:  []string{"kube-controller-manager", "--cluster-signing-cert-file=/old", "--cluster-signing-cert-file=/new"},
			wantCert: "/new", wantKey: "/etc/kubernetes/ca/ca.key",
		},
		{
			name:     "no flags: kube-controller-manager's defaults",
			command:  []string{"kube-controller-manager", "--cluster-signing-duration=8760h"},
			wantCert: "/etc/kubernetes/ca/ca.pem", wantKey: "/etc/kubernetes/ca/ca.key",
		},
		{
			name:     "a flag without a value falls back",
			command:  []string{"kube-controller-manager", "--cluster-signing-cert-file"},
			wantCert: "/etc/kubernetes/ca/ca.pem", wantKey: "/etc/kubernetes/ca/ca.key",
		},
		{
			name:     "similar flags are not matched",
			command:  []string{"kube-controller-manager", "--cluster-signing-cert-file-extra=/x", "--cluster-signing-legacy-unknown-key-file=/y"},
			wantCert: "/etc/kubernetes/ca/ca.pem", wantKey: "/etc/kubernetes/ca/ca.key",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cert, key := signingPaths(&corev1.Container{Command: tt.command, Args: tt.args})
			if cert != tt.wantCert || key != tt.wantKey {
				t.Errorf("got %q, %q; want %q, %q", cert, key, tt.wantCert, tt.wantKey)
			}
		})
	}
}
