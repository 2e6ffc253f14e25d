package ingress

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"sealion.dev/core/testing/controlplane"
	"sealion.dev/providers"
)

// TestIntegration runs the controller against a real kube-apiserver, which validates the
// IngressClass and the status writes, with the impersonation proxy's setup on Talos: a ClusterIP
// Service behind a passthrough Ingress that names no class, written for ingress-nginx.
func TestIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: needs a real etcd and kube-apiserver, which -short excludes")
	}
	cp := controlplane.StartForTest(t, controlplane.Options{})
	client, err := kubernetes.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The API server rejects loopback addresses in EndpointSlices, so the echo server standing in
	// for the pod listens on this machine's own address.
	host, err := providers.HostIPv4()
	if err != nil {
		t.Fatal(err)
	}
	server := startTLSEchoServer(t, host, "proxy", "proxy.sealion.test")
	proxyIngress := newIngress("proxy", withRule("proxy.sealion.test", "proxy"))
	proxyIngress.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port = networkingv1.ServiceBackendPort{Name: "https"}
	create := []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}, newService("proxy")}
	create = append(create, newSlices(t, "proxy", server)...)
	create = append(create, proxyIngress)
	for _, obj := range create {
		var err error
		switch obj := obj.(type) {
		case *corev1.Namespace:
			_, err = client.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{})
		case *corev1.Service:
			_, err = client.CoreV1().Services(testNamespace).Create(ctx, obj, metav1.CreateOptions{})
		case *networkingv1.Ingress:
			_, err = client.NetworkingV1().Ingresses(testNamespace).Create(ctx, obj, metav1.CreateOptions{})
		case *discoveryv1.EndpointSlice:
			_, err = client.DiscoveryV1().EndpointSlices(testNamespace).Create(ctx, obj, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatalf("creating %T: %v", obj, err)
		}
	}

	hosts := filepath.Join(t.TempDir(), "hosts")
	listen := net.JoinHostPort(integrationIP, strconv.Itoa(freePort(t)))
	stop := startController(t, client, Config{Address: listen, HostsFile: hosts})

	waitForStatus(t, client, "proxy", integrationIP)
	waitForEvent(t, client, "proxy", reasonRouted, "proxy.sealion.test")
	waitForHosts(t, hosts, map[string]netip.Addr{"proxy.sealion.test": netip.MustParseAddr(integrationIP)})
	c, err := dialEcho(listen, "proxy.sealion.test", roots(server))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.roundTrip("through the ingress"); err != nil {
		t.Fatal(err)
	}
	c.conn.Close()
	expectClosed(t, listen, "unknown.sealion.test")

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if content, err := os.ReadFile(hosts); err != nil || len(content) != 0 {
		t.Fatalf("hosts file after stopping = %q, %v; want it empty", content, err)
	}
}
