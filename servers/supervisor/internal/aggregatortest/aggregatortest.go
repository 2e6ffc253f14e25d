// Package aggregatortest sets up what the Supervisor's aggregated API tests share against a real
// kube-apiserver: an OIDCClient to request secrets for, and an APIService that sends
// clientsecret.supervisor.pinniped.dev to a server listening on a loopback port of this host.
package aggregatortest

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"

	clientsecretv1alpha1 "sealion.dev/core/apis/supervisor/clientsecret/v1alpha1"
	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	supervisorclientset "sealion.dev/core/generated/supervisor/clientset/versioned"
	"sealion.dev/core/testing/controlplane"
)

// APIServiceName is the APIService of the clientsecret group.
const APIServiceName = "v1alpha1." + clientsecretv1alpha1.GroupName

// CreateOIDCClient creates an OIDCClient allowed the authorization code flow to
// https://app.example.com/callback, retrying while its CRD is not served yet.
func CreateOIDCClient(ctx context.Context, t testing.TB, supervisor supervisorclientset.Interface, namespace, name string) *configv1alpha1.OIDCClient {
	t.Helper()
	var client *configv1alpha1.OIDCClient
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		client, err = supervisor.ConfigV1alpha1().OIDCClients(namespace).Create(ctx, &configv1alpha1.OIDCClient{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: configv1alpha1.OIDCClientSpec{
				AllowedRedirectURIs: []configv1alpha1.RedirectURI{"https://app.example.com/callback"},
				AllowedGrantTypes:   []configv1alpha1.GrantType{configv1alpha1.GrantTypeAuthorizationCode},
				AllowedScopes:       []configv1alpha1.Scope{configv1alpha1.ScopeOpenID},
			},
		}, metav1.CreateOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("creating the OIDCClient %s: %v", name, err)
	}
	return client
}

// RegisterAPIService points the aggregator at 127.0.0.1:port through an ExternalName Service named
// service (the control plane resolves "localhost" itself, and verifies the server's certificate
// for <service>.<namespace>.svc), and waits until the aggregator serves it. An empty caBundle is
// left for the server under test to fill in.
func RegisterAPIService(ctx context.Context, t testing.TB, config *rest.Config, namespace, service string, port int, caBundle []byte) {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(config)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: service, Namespace: namespace},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
	}
	if _, err := kube.CoreV1().Services(namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	aggregator := aggregatorclient.NewForConfigOrDie(config)
	_, err := aggregator.ApiregistrationV1().APIServices().Create(ctx, &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: APIServiceName},
		Spec: apiregistrationv1.APIServiceSpec{
			Group: clientsecretv1alpha1.GroupName, Version: "v1alpha1", GroupPriorityMinimum: 9900, VersionPriority: 15,
			Service:  &apiregistrationv1.ServiceReference{Namespace: namespace, Name: service, Port: ptr.To(int32(port))},
			CABundle: caBundle,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := controlplane.WaitForAPIService(ctx, config, clientsecretv1alpha1.GroupName, "v1alpha1", 60*time.Second); err != nil {
		t.Fatal(err)
	}
}
