package loadbalancer

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

const testNamespace = "lb-test"

// Test ranges stay clear of DefaultRange, which a simulated cluster on this machine may be using.
var (
	unitRange        = netip.MustParsePrefix("127.0.203.0/24")
	integrationRange = netip.MustParsePrefix("127.0.204.0/24")
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

type serviceOption func(*corev1.Service)

func withLoadBalancerIP(ip string) serviceOption {
	return func(s *corev1.Service) { s.Spec.LoadBalancerIP = ip }
}

func withStatusIP(ip string) serviceOption {
	return func(s *corev1.Service) { s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}} }
}

func withType(typ corev1.ServiceType) serviceOption {
	return func(s *corev1.Service) { s.Spec.Type = typ }
}

func withClass(class string) serviceOption {
	return func(s *corev1.Service) { s.Spec.LoadBalancerClass = &class }
}

func newService(name string, port int32, opts ...serviceOption) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{
				Name: "echo", Port: port, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("echo"),
			}},
		},
	}
	for _, o := range opts {
		o(svc)
	}
	return svc
}

// newSlice points the Service's "echo" port at the echo servers; it needs only the addresses to
// be ready.
func newSlice(t *testing.T, service, name string, servers ...*echoServer) *discoveryv1.EndpointSlice {
	t.Helper()
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: testNamespace, Name: name,
			Labels: map[string]string{discoveryv1.LabelServiceName: service},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for _, s := range servers {
		host, portText, err := net.SplitHostPort(s.addr)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(portText)
		if len(slice.Ports) == 0 {
			slice.Ports = []discoveryv1.EndpointPort{{Name: ptr.To("echo"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}}
		} else if *slice.Ports[0].Port != int32(port) {
			t.Fatal("newSlice: echo servers must share a port; use one slice per port")
		}
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return slice
}

// waitForIngress waits until the Service's status satisfies ok and returns it.
func waitForIngress(t *testing.T, client kubernetes.Interface, name string, ok func([]corev1.LoadBalancerIngress) bool) []corev1.LoadBalancerIngress {
	t.Helper()
	var last []corev1.LoadBalancerIngress
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		svc, err := client.CoreV1().Services(testNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = svc.Status.LoadBalancer.Ingress
		return ok(last), nil
	})
	if err != nil {
		t.Fatalf("waiting for the ingress of Service %s: %v (last: %+v); its Events: %s", name, err, last, serviceEvents(client, name))
	}
	return last
}

// serviceEvents lists the reasons and messages of the Events about Service name, which say why
// the controller gave it no address (a port it could not listen on, say).
func serviceEvents(client kubernetes.Interface, name string) string {
	events, err := client.CoreV1().Events(testNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var seen []string
	for _, e := range events.Items {
		if e.InvolvedObject.Name == name {
			seen = append(seen, e.Reason+": "+e.Message)
		}
	}
	if len(seen) == 0 {
		return "none"
	}
	return strings.Join(seen, "; ")
}

func hasIP(ip string) func([]corev1.LoadBalancerIngress) bool {
	return func(ing []corev1.LoadBalancerIngress) bool {
		return len(ing) == 1 && ing[0].IP == ip && ing[0].Hostname == "" && ptr.Deref(ing[0].IPMode, "") == corev1.LoadBalancerIPModeProxy
	}
}

func isEmpty(ing []corev1.LoadBalancerIngress) bool { return len(ing) == 0 }

// eventually retries check for a while; it reports the last failure.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		last = check()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, last)
	}
}

func waitForEvent(t *testing.T, client kubernetes.Interface, reason, messagePart string) {
	t.Helper()
	eventually(t, "waiting for a "+reason+" Event", func() error {
		events, err := client.CoreV1().Events(testNamespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == reason && strings.Contains(e.Message, messagePart) {
				return nil
			}
		}
		return fmt.Errorf("no %s Event containing %q among %d", reason, messagePart, len(events.Items))
	})
}

func addr(ip string, port int32) string {
	return net.JoinHostPort(ip, strconv.Itoa(int(port)))
}

func TestAllocation(t *testing.T) {
	tests := []struct {
		name     string
		services []*corev1.Service
		want     map[string]string // Service -> ingress IP; "" for no ingress
		event    string            // a SyncLoadBalancerFailed message part, if one is expected
	}{
		{
			name: "lowest free addresses, only for type LoadBalancer without a class",
			services: []*corev1.Service{
				newService("first", 1001),
				newService("cluster-ip", 1002, withType(corev1.ServiceTypeClusterIP)),
				newService("other-class", 1003, withClass("example.com/lb")),
			},
			want: map[string]string{"first": "127.0.203.1", "cluster-ip": "", "other-class": ""},
		},
		{
			name:     "spec.loadBalancerIP is honoured",
			services: []*corev1.Service{newService("pinned", 1001, withLoadBalancerIP("127.0.203.77"))},
			want:     map[string]string{"pinned": "127.0.203.77"},
		},
		{
			name:     "the address in the status is kept, as after a controller restart",
			services: []*corev1.Service{newService("restarted", 1001, withStatusIP("127.0.203.9"))},
			want:     map[string]string{"restarted": "127.0.203.9"},
		},
		{
			name:     "spec.loadBalancerIP outside the range",
			services: []*corev1.Service{newService("outside", 1001, withLoadBalancerIP("127.0.99.1"))},
			want:     map[string]string{"outside": ""},
			event:    "not in the load balancer range",
		},
		{
			name:     "spec.loadBalancerIP that is not an IP",
			services: []*corev1.Service{newService("garbled", 1001, withLoadBalancerIP("not-an-ip"))},
			want:     map[string]string{"garbled": ""},
			event:    `spec.loadBalancerIP "not-an-ip" is not an IP address`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			for _, svc := range tt.services {
				svc.Spec.Ports[0].Port = freePort(t)
				if _, err := client.CoreV1().Services(testNamespace).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			startController(t, client, Config{Mode: ModeIP, Range: unitRange})
			if tt.event != "" {
				waitForEvent(t, client, reasonFailed, tt.event)
			}
			for _, svc := range tt.services {
				want := tt.want[svc.Name]
				if want == "" {
					// Let the controller have its chance to (wrongly) write a status.
					time.Sleep(200 * time.Millisecond)
					waitForIngress(t, client, svc.Name, isEmpty)
					continue
				}
				waitForIngress(t, client, svc.Name, hasIP(want))
				conn, err := net.DialTimeout("tcp", addr(want, svc.Spec.Ports[0].Port), time.Second)
				if err != nil {
					t.Fatalf("Service %s: no forwarder listening: %v", svc.Name, err)
				}
				conn.Close()
			}
		})
	}
}

func TestLoadBalancerIPConflict(t *testing.T) {
	client := fake.NewClientset()
	startController(t, client, Config{Mode: ModeIP, Range: unitRange})
	ctx := context.Background()
	if _, err := client.CoreV1().Services(testNamespace).Create(ctx, newService("one", freePort(t), withLoadBalancerIP("127.0.203.5")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForIngress(t, client, "one", hasIP("127.0.203.5"))
	if _, err := client.CoreV1().Services(testNamespace).Create(ctx, newService("two", freePort(t), withLoadBalancerIP("127.0.203.5")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForEvent(t, client, reasonFailed, "already used by Service "+testNamespace+"/one")

	// Once the first gives the address up, the second gets it on a retry.
	if err := client.CoreV1().Services(testNamespace).Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForIngress(t, client, "two", hasIP("127.0.203.5"))
}

func TestForwardingAndRelease(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		change func(kubernetes.Interface) error
		// wantIngress checks the status afterwards; nil when the Service is gone.
		wantIngress func([]corev1.LoadBalancerIngress) bool
	}{
		{
			name: "type changes to ClusterIP",
			change: func(client kubernetes.Interface) error {
				svc, err := client.CoreV1().Services(testNamespace).Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					return err
				}
				svc.Spec.Type = corev1.ServiceTypeClusterIP
				_, err = client.CoreV1().Services(testNamespace).Update(ctx, svc, metav1.UpdateOptions{})
				return err
			},
			wantIngress: isEmpty,
		},
		{
			name: "Service is deleted",
			change: func(client kubernetes.Interface) error {
				return client.CoreV1().Services(testNamespace).Delete(ctx, "web", metav1.DeleteOptions{})
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			a := startEchoServer(t, "127.0.0.1", "a")
			port := freePort(t)
			if _, err := client.CoreV1().Services(testNamespace).Create(ctx, newService("web", port), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := client.DiscoveryV1().EndpointSlices(testNamespace).Create(ctx, newSlice(t, "web", "web-1", a), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			startController(t, client, Config{Mode: ModeIP, Range: unitRange})
			waitForIngress(t, client, "web", hasIP("127.0.203.1"))
			lbAddr := addr("127.0.203.1", port)
			eventually(t, "connecting through the load balancer", func() error {
				c, err := dialEcho(lbAddr)
				if err != nil {
					return err
				}
				defer c.conn.Close()
				return c.roundTrip("hello")
			})

			if err := tt.change(client); err != nil {
				t.Fatal(err)
			}
			eventually(t, "waiting for the listener to close", func() error {
				conn, err := net.DialTimeout("tcp", lbAddr, time.Second)
				if err == nil {
					conn.Close()
					return fmt.Errorf("%s still accepts connections", lbAddr)
				}
				return nil
			})
			if tt.wantIngress != nil {
				waitForIngress(t, client, "web", tt.wantIngress)
			}
			waitForEvent(t, client, reasonEnsured, "127.0.203.1")

			// The released address goes to the next Service.
			if _, err := client.CoreV1().Services(testNamespace).Create(ctx, newService("next", freePort(t)), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitForIngress(t, client, "next", hasIP("127.0.203.1"))
		})
	}
}

func TestHostnameMode(t *testing.T) {
	ctx := context.Background()
	hosts := filepath.Join(t.TempDir(), "hosts")
	const original = "127.0.0.1 localhost\n"
	// A block left by a controller that crashed: web keeps its address, gone's line is dropped.
	stale := original + hostsBegin + "\n127.0.203.40\tweb.lb-test.elb.test\n127.0.203.41\tgone.lb-test.elb.test\n" + hostsEnd + "\n"
	if err := os.WriteFile(hosts, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	a := startEchoServer(t, "127.0.0.1", "a")
	port := freePort(t)
	for _, name := range []string{"web", "api"} {
		if _, err := client.CoreV1().Services(testNamespace).Create(ctx, newService(name, port), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.DiscoveryV1().EndpointSlices(testNamespace).Create(ctx, newSlice(t, "web", "web-1", a), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stop := startController(t, client, Config{Mode: ModeHostname, Range: unitRange, HostnamePattern: "{name}.{namespace}.elb.test", HostsFile: hosts})

	for _, name := range []string{"web", "api"} {
		want := name + ".lb-test.elb.test"
		waitForIngress(t, client, name, func(ing []corev1.LoadBalancerIngress) bool {
			return len(ing) == 1 && ing[0].Hostname == want && ing[0].IP == "" && ing[0].IPMode == nil
		})
	}
	wantBlock := map[string]netip.Addr{
		"web.lb-test.elb.test": netip.MustParseAddr("127.0.203.40"),
		"api.lb-test.elb.test": netip.MustParseAddr("127.0.203.1"),
	}
	eventually(t, "waiting for the hosts block", func() error {
		got, err := hostsFile(hosts).Read()
		if err != nil {
			return err
		}
		if len(got) != len(wantBlock) || got["web.lb-test.elb.test"] != wantBlock["web.lb-test.elb.test"] || got["api.lb-test.elb.test"] != wantBlock["api.lb-test.elb.test"] {
			return fmt.Errorf("hosts block = %v; want %v", got, wantBlock)
		}
		return nil
	})
	c, err := dialEcho(addr("127.0.203.40", port))
	if err != nil {
		t.Fatalf("connecting to the address the hosts file gives web: %v", err)
	}
	if err := c.roundTrip("hello"); err != nil {
		t.Fatal(err)
	}
	c.conn.Close()

	if err := client.CoreV1().Services(testNamespace).Delete(ctx, "api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "waiting for api's hosts line to go", func() error {
		got, err := hostsFile(hosts).Read()
		if err == nil && len(got) != 1 {
			err = fmt.Errorf("hosts block = %v; want web only", got)
		}
		return err
	})

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if content, _ := os.ReadFile(hosts); string(content) != original {
		t.Fatalf("hosts file after shutdown:\n%s\nwant the lines outside the block only:\n%s", content, original)
	}
	if conn, err := net.DialTimeout("tcp", addr("127.0.203.40", port), time.Second); err == nil {
		conn.Close()
		t.Fatal("the forwarder still listens after shutdown")
	}
}
