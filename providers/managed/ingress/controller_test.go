package ingress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

const testNamespace = "ingress-test"

// Test listeners stay clear of 127.0.10.0/24 and 127.0.11.0/24, which a simulated cluster on this
// machine may be using, and of the load balancer tests' ranges.
const (
	unitIP        = "127.0.205.1"
	integrationIP = "127.0.206.1"
)

// startController runs a controller until the test ends; stop ends it early and returns Run's error.
func startController(t *testing.T, client kubernetes.Interface, cfg Config) (stop func() error) {
	t.Helper()
	c, err := New(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var result error
	stopped := false
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			result = <-done
		}
		return result
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("controller Run: %v", err)
		}
	})
	return stop
}

// newService is a ClusterIP Service with port 443 named https.
func newService(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8443),
		}}},
	}
}

// newSlices put servers behind the https port of service, standing in for its pods: one slice
// each, since each listens on a port of its own.
func newSlices(t *testing.T, service string, servers ...*tlsEchoServer) []runtime.Object {
	t.Helper()
	var out []runtime.Object
	for i, s := range servers {
		host, port, err := net.SplitHostPort(s.addr)
		if err != nil {
			t.Fatal(err)
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("%s-%d", service, i), Namespace: testNamespace,
				Labels: map[string]string{discoveryv1.LabelServiceName: service},
			},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(p)), Protocol: ptr.To(corev1.ProtocolTCP)}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host}}},
		})
	}
	return out
}

// objects joins the objects a fake client starts with.
func objects(groups ...[]runtime.Object) []runtime.Object {
	return slices.Concat(groups...)
}

// waitForStatus waits until the Ingress's status lists exactly ips.
func waitForStatus(t *testing.T, client kubernetes.Interface, name string, ips ...string) {
	t.Helper()
	eventually(t, "waiting for the status of Ingress "+name, func() error {
		ing, err := client.NetworkingV1().Ingresses(testNamespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var got []string
		for _, lb := range ing.Status.LoadBalancer.Ingress {
			got = append(got, lb.IP+lb.Hostname)
		}
		if !slices.Equal(got, ips) {
			return fmt.Errorf("status lists %v; want %v", got, ips)
		}
		return nil
	})
}

func waitForEvent(t *testing.T, client kubernetes.Interface, object, reason, messagePart string) {
	t.Helper()
	eventually(t, "waiting for a "+reason+" Event", func() error {
		events, err := client.CoreV1().Events(testNamespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == object && e.Reason == reason && strings.Contains(e.Message, messagePart) {
				return nil
			}
		}
		return fmt.Errorf("no %s Event for %s containing %q among %d", reason, object, messagePart, len(events.Items))
	})
}

// waitForHosts waits until the controller's hosts block holds exactly want.
func waitForHosts(t *testing.T, path string, want map[string]netip.Addr) {
	t.Helper()
	eventually(t, "waiting for the hosts block", func() error {
		got, err := hostsFile(path).Read()
		if err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("hosts block = %v; want %v", got, want)
		}
		return nil
	})
}

// expectClosed checks that the controller closes a connection asking for serverName rather
// than relaying it or leaving it hanging.
func expectClosed(t *testing.T, addr, serverName string) {
	t.Helper()
	c, err := dialEcho(addr, serverName, nil)
	if err == nil {
		c.conn.Close()
		t.Fatalf("server name %q: answered by %q; want the connection closed", serverName, c.server)
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		t.Fatalf("server name %q: %v; want the connection closed at once", serverName, err)
	}
}

func TestController(t *testing.T) {
	a := startTLSEchoServer(t, "127.0.0.1", "a", "proxy.sealion.test")
	b := startTLSEchoServer(t, "127.0.0.1", "b", "proxy.sealion.test")
	apps := startTLSEchoServer(t, "127.0.0.1", "apps", "*.apps.sealion.test")
	proxyRoots := roots(a, b)

	client := fake.NewClientset(objects(newSlices(t, "proxy", a, b), newSlices(t, "apps", apps), []runtime.Object{
		newService("proxy"),
		newService("apps"),
		newIngress("proxy",
			withRule("proxy.sealion.test", "proxy"),
			withDefaultBackend("apps", networkingv1.ServiceBackendPort{Name: "https"}),
			withRule("*.apps.sealion.test", "")),
		newIngress("plain", withoutPassthrough, withRule("plain.sealion.test", "proxy")),
		newIngress("elsewhere", withClass("nginx"), withRule("nginx.sealion.test", "proxy")),
	})...)
	hosts := filepath.Join(t.TempDir(), "hosts")
	const others = "127.0.0.1\tlocalhost\n"
	if err := os.WriteFile(hosts, []byte(others), 0o644); err != nil {
		t.Fatal(err)
	}
	listen := net.JoinHostPort(unitIP, strconv.Itoa(freePort(t)))
	stop := startController(t, client, Config{Address: listen, HostsFile: hosts})

	waitForStatus(t, client, "proxy", unitIP)
	waitForEvent(t, client, "proxy", reasonRouted, "*.apps.sealion.test, proxy.sealion.test")
	waitForEvent(t, client, "plain", reasonPassthroughOnly, PassthroughAnnotation)
	waitForHosts(t, hosts, map[string]netip.Addr{"proxy.sealion.test": netip.MustParseAddr(unitIP)})
	class, err := client.NetworkingV1().IngressClasses().Get(context.Background(), ClassName, metav1.GetOptions{})
	if err != nil || class.Spec.Controller != ControllerName || class.Annotations[defaultClassAnnotation] != "true" {
		t.Fatalf("IngressClass = %+v, %v; want one of %s marked as the default", class, err, ControllerName)
	}

	// The client verifies the echo servers' certificates: the handshake completing through the
	// controller shows the ClientHello reached them unchanged.
	var answered []string
	for range 4 {
		c, err := dialEcho(listen, "proxy.sealion.test", proxyRoots)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.roundTrip("hello"); err != nil {
			t.Fatal(err)
		}
		c.conn.Close()
		answered = append(answered, c.server)
	}
	if answered[0] == answered[1] || answered[0] != answered[2] || answered[1] != answered[3] {
		t.Errorf("connections answered by %v; want a and b in turn", answered)
	}
	c, err := dialEcho(listen, "x.apps.sealion.test", roots(apps))
	if err != nil || c.server != "apps" {
		t.Fatalf("wildcard host: %+v, %v; want an answer from apps", c, err)
	}
	c.conn.Close()

	for _, name := range []string{"", "a.x.apps.sealion.test", "plain.sealion.test", "nginx.sealion.test", "unknown.sealion.test"} {
		expectClosed(t, listen, name)
	}
	for _, name := range []string{"plain", "elsewhere"} {
		waitForStatus(t, client, name)
	}

	// Without the annotation the Ingress is no longer routed: its status, hosts entry and
	// connections go.
	ing, err := client.NetworkingV1().Ingresses(testNamespace).Get(context.Background(), "proxy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	withoutPassthrough(ing)
	if _, err := client.NetworkingV1().Ingresses(testNamespace).Update(context.Background(), ing, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForStatus(t, client, "proxy")
	waitForEvent(t, client, "proxy", reasonReleased, unitIP)
	waitForHosts(t, hosts, map[string]netip.Addr{})
	expectClosed(t, listen, "proxy.sealion.test")

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if content, _ := os.ReadFile(hosts); string(content) != others {
		t.Fatalf("hosts file after stopping = %q; want %q", content, others)
	}
}

func TestControllerStopRemovesHostsBlock(t *testing.T) {
	server := startTLSEchoServer(t, "127.0.0.1", "a", "proxy.sealion.test")
	client := fake.NewClientset(objects(newSlices(t, "proxy", server), []runtime.Object{
		newService("proxy"), newIngress("proxy", withRule("proxy.sealion.test", "proxy")),
	})...)
	hosts := filepath.Join(t.TempDir(), "hosts")
	listen := net.JoinHostPort(unitIP, strconv.Itoa(freePort(t)))
	stop := startController(t, client, Config{Address: listen, HostsFile: hosts})
	waitForHosts(t, hosts, map[string]netip.Addr{"proxy.sealion.test": netip.MustParseAddr(unitIP)})
	c, err := dialEcho(listen, "proxy.sealion.test", roots(server))
	if err != nil {
		t.Fatal(err)
	}
	defer c.conn.Close()

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got, err := hostsFile(hosts).Read(); err != nil || len(got) != 0 {
		t.Fatalf("hosts block after stopping = %v, %v; want none", got, err)
	}
	if _, err := c.reader.ReadByte(); err == nil {
		t.Fatal("a relayed connection is still open after Run returned")
	}
	// The status stays, as for a controller being restarted.
	waitForStatus(t, client, "proxy", unitIP)
}

func TestControllerClass(t *testing.T) {
	notDefault := &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: ClassName, Annotations: map[string]string{defaultClassAnnotation: "false"}},
		Spec:       networkingv1.IngressClassSpec{Controller: ControllerName},
	}
	server := startTLSEchoServer(t, "127.0.0.1", "a", "named.sealion.test")
	client := fake.NewClientset(objects(newSlices(t, "proxy", server), []runtime.Object{
		notDefault, newService("proxy"),
		newIngress("unnamed", withRule("unnamed.sealion.test", "proxy")),
		newIngress("named", withClass(ClassName), withRule("named.sealion.test", "proxy")),
	})...)
	listen := net.JoinHostPort(unitIP, strconv.Itoa(freePort(t)))
	startController(t, client, Config{Address: listen, HostsFile: filepath.Join(t.TempDir(), "hosts")})

	waitForStatus(t, client, "named", unitIP)
	waitForStatus(t, client, "unnamed")
	expectClosed(t, listen, "unnamed.sealion.test")
	class, err := client.NetworkingV1().IngressClasses().Get(context.Background(), ClassName, metav1.GetOptions{})
	if err != nil || class.Annotations[defaultClassAnnotation] != "false" {
		t.Fatalf("IngressClass = %+v, %v; want it left as it was", class, err)
	}
}

func TestControllerRefusesAnotherControllersClass(t *testing.T) {
	taken := &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: ClassName},
		Spec:       networkingv1.IngressClassSpec{Controller: "example.com/other"},
	}
	c, err := New(fake.NewClientset(taken), Config{Address: net.JoinHostPort(unitIP, strconv.Itoa(freePort(t))), HostsFile: filepath.Join(t.TempDir(), "hosts")})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "example.com/other") {
		t.Fatalf("Run() = %v; want an error naming the class's controller", err)
	}
}
