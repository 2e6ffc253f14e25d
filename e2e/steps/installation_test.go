package steps

import (
	"context"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorfake "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/fake"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	conciergeclientset "sealion.dev/core/generated/concierge/clientset/versioned"
	conciergefake "sealion.dev/core/generated/concierge/clientset/versioned/fake"
	"sealion.dev/e2e/installation"
)

func apiService(name, namespace, service string) *apiregistrationv1.APIService {
	s := &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if service != "" {
		s.Spec.Service = &apiregistrationv1.ServiceReference{Namespace: namespace, Name: service}
	}
	return s
}

func service(namespace, name string, selector map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: corev1.ServiceSpec{Selector: selector}}
}

func deployment(namespace, name string, labels, pods map[string]string, image string, ports ...corev1.ContainerPort) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: pods},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: pods},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: image, Ports: ports}}},
			},
		},
	}
}

// acme is a user's Helm installation: its own namespaces and API group suffix, a version label,
// beside the cluster's own APIServices and a Deployment the Concierge's Service does not select.
func acme() (aggregator []runtime.Object, kube []runtime.Object, concierge []runtime.Object) {
	conciergePods := map[string]string{"deployment.pinniped.dev": "concierge"}
	supervisorPods := map[string]string{"deployment.pinniped.dev": "supervisor"}
	aggregator = []runtime.Object{
		apiService("v1.apps", "", ""),
		apiService("v1alpha1.login.concierge.auth.acme.example", "acme-concierge", "pinniped-concierge-api"),
		apiService("v1alpha1.identity.concierge.auth.acme.example", "acme-concierge", "pinniped-concierge-api"),
		apiService("v1alpha1.clientsecret.supervisor.auth.acme.example", "acme-supervisor", "pinniped-supervisor-api"),
	}
	kube = []runtime.Object{
		service("acme-concierge", "pinniped-concierge-api", conciergePods),
		service("acme-supervisor", "pinniped-supervisor-api", supervisorPods),
		deployment("acme-concierge", "pinniped-concierge", map[string]string{"app.kubernetes.io/version": "v0.47.0"}, conciergePods,
			"registry.acme.example/pinniped-server:v0.47.0"),
		deployment("acme-concierge", "pinniped-concierge-kube-cert-agent", nil, map[string]string{"kube-cert-agent.pinniped.dev": "v3"},
			"registry.k8s.io/kube-controller-manager:v1.37.2"),
		deployment("acme-supervisor", "pinniped-supervisor", nil, supervisorPods,
			"registry.acme.example/pinniped-server@sha256:0123", corev1.ContainerPort{Name: "http", ContainerPort: 8080},
			corev1.ContainerPort{Name: "https", ContainerPort: 8443}),
	}
	concierge = []runtime.Object{&configv1alpha1.CredentialIssuer{
		ObjectMeta: metav1.ObjectMeta{Name: "pinniped-concierge-config"},
		Status: configv1alpha1.CredentialIssuerStatus{Strategies: []configv1alpha1.CredentialIssuerStrategy{
			{Type: configv1alpha1.StrategyTypeKubeClusterSigningCertificate, Status: configv1alpha1.StrategyStatusSuccess, Reason: configv1alpha1.StrategyReasonFetchedKey},
			{Type: configv1alpha1.StrategyTypeImpersonationProxy, Status: configv1alpha1.StrategyStatusError, Reason: configv1alpha1.StrategyReasonDisabled},
		}},
	}}
	return aggregator, kube, concierge
}

func find(t *testing.T, aggregator, kube, concierge []runtime.Object) (installation.Installation, error) {
	t.Helper()
	var suffixes []string
	inst, err := Find(context.Background(), aggregatorfake.NewSimpleClientset(aggregator...), kubefake.NewClientset(kube...),
		func(suffix string) (conciergeclientset.Interface, error) {
			suffixes = append(suffixes, suffix)
			return conciergefake.NewSimpleClientset(concierge...), nil
		})
	if err == nil && !reflect.DeepEqual(suffixes, []string{inst.APIGroupSuffix}) {
		t.Errorf("the CredentialIssuers were read under suffixes %q, want the installation's %s", suffixes, inst.APIGroupSuffix)
	}
	return inst, err
}

func TestFindUsersInstallation(t *testing.T) {
	aggregator, kube, concierge := acme()
	inst, err := find(t, aggregator, kube, concierge)
	if err != nil {
		t.Fatal(err)
	}
	want := installation.Installation{
		Discovered:       true,
		APIGroupSuffix:   "auth.acme.example",
		CredentialIssuer: "pinniped-concierge-config",
		Strategies:       []string{"KubeClusterSigningCertificate: Success (FetchedKey)", "ImpersonationProxy: Error (Disabled)"},
		Concierge: installation.Server{Namespace: "acme-concierge", Deployment: "pinniped-concierge",
			Image: "registry.acme.example/pinniped-server:v0.47.0", Version: "v0.47.0",
			Pods: map[string]string{"deployment.pinniped.dev": "concierge"}},
		// By digest and without a version label: no version to report.
		Supervisor: &installation.Server{Namespace: "acme-supervisor", Deployment: "pinniped-supervisor",
			Image: "registry.acme.example/pinniped-server@sha256:0123", Pods: map[string]string{"deployment.pinniped.dev": "supervisor"}, HTTPSPort: 8443},
	}
	if !reflect.DeepEqual(inst, want) {
		t.Errorf("found\n%+v\nwant\n%+v", inst, want)
	}
}

func TestFindWithoutSupervisor(t *testing.T) {
	aggregator, kube, concierge := acme()
	inst, err := find(t, aggregator[:3], kube, concierge)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Supervisor != nil {
		t.Errorf("found a Supervisor %+v where none serves", inst.Supervisor)
	}
	if got := strings.Join(inst.Summary(), "\n"); !strings.Contains(got, "Supervisor: none installed") {
		t.Errorf("summary %q does not say there is no Supervisor", got)
	}
}

// What cannot be tested as one installation is refused with what was found, not guessed at.
func TestFindRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		change func(aggregator, kube, concierge *[]runtime.Object)
		want   string
	}{
		"no Concierge": {func(a, _, _ *[]runtime.Object) { *a = (*a)[:1] }, "found 0 Concierges"},
		"two Concierges": {func(a, k, _ *[]runtime.Object) {
			*a = append(*a, apiService("v1alpha1.login.concierge.pinniped.dev", "pinniped-concierge", "pinniped-concierge-api"))
		}, "found 2 Concierges"},
		"a Supervisor of another suffix": {func(a, _, _ *[]runtime.Object) {
			(*a)[3] = apiService("v1alpha1.clientsecret.supervisor.pinniped.dev", "acme-supervisor", "pinniped-supervisor-api")
		}, "another API group suffix"},
		"a Service selecting no Deployment": {func(_, k, _ *[]runtime.Object) {
			(*k)[0] = service("acme-concierge", "pinniped-concierge-api", map[string]string{"app": "gone"})
		}, "0 Deployments in acme-concierge run the pods of Service pinniped-concierge-api"},
		"no CredentialIssuer": {func(_, _, c *[]runtime.Object) { *c = nil }, "found 0 CredentialIssuers"},
	} {
		t.Run(name, func(t *testing.T) {
			aggregator, kube, concierge := acme()
			c.change(&aggregator, &kube, &concierge)
			_, err := find(t, aggregator, kube, concierge)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

func TestImageTag(t *testing.T) {
	for image, want := range map[string]string{
		"registry.acme.example:5000/pinniped-server:v0.47.0": "v0.47.0",
		"registry.acme.example:5000/pinniped-server":         "",
		"pinniped-server@sha256:0123":                        "",
		"pinniped-server:v1@sha256:0123":                     "",
	} {
		if got := imageTag(image); got != want {
			t.Errorf("imageTag(%q) = %q, want %q", image, got, want)
		}
	}
}
