package loadbalancer

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"sealion.dev/core/testing/controlplane"
	"sealion.dev/providers"
)

// TestIntegration runs the controller against a real kube-apiserver, which validates the status
// writes, with echo servers on this machine standing in for pods.
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
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server rejects loopback addresses in EndpointSlices, so the echo servers standing in
	// for pods listen on this machine's own address.
	host, err := providers.HostIPv4()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("IP mode", func(t *testing.T) {
		a := startEchoServer(t, host, "a")
		b := startEchoServer(t, host, "b")
		port := freePort(t)
		createService(t, client, newService("echo-ip", port))
		createService(t, client, newService("pinned", freePort(t), withLoadBalancerIP("127.0.204.50")))
		if _, err := client.DiscoveryV1().EndpointSlices(testNamespace).Create(ctx, newSlice(t, "echo-ip", "echo-ip-1", a), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		startController(t, client, Config{Mode: ModeIP, Range: integrationRange})
		waitForIngress(t, client, "echo-ip", hasIP("127.0.204.1"))
		waitForIngress(t, client, "pinned", hasIP("127.0.204.50"))
		lbAddr := addr("127.0.204.1", port)

		var stream *echoClient
		eventually(t, "connecting through the load balancer", func() error {
			c, err := dialEcho(lbAddr)
			if err != nil {
				return err
			}
			if err := c.roundTrip("hello"); err != nil {
				c.conn.Close()
				return err
			}
			stream = c
			return nil
		})
		defer stream.conn.Close()
		if stream.server != "a" {
			t.Fatalf("answered by %q; want a, the only endpoint", stream.server)
		}

		// Move the endpoint to b: new connections go there, the open one stays with a.
		slice, err := client.DiscoveryV1().EndpointSlices(testNamespace).Get(ctx, "echo-ip-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		moved := newSlice(t, "echo-ip", "echo-ip-1", b)
		moved.ResourceVersion = slice.ResourceVersion
		if _, err := client.DiscoveryV1().EndpointSlices(testNamespace).Update(ctx, moved, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "waiting for new connections to reach b", func() error {
			c, err := dialEcho(lbAddr)
			if err != nil {
				return err
			}
			defer c.conn.Close()
			if c.server != "b" {
				return fmt.Errorf("answered by %q", c.server)
			}
			return c.roundTrip("hello b")
		})
		if err := stream.roundTrip("still streaming"); err != nil {
			t.Fatalf("the connection opened before the endpoint update broke: %v", err)
		}

		for _, name := range []string{"echo-ip", "pinned"} {
			if err := client.CoreV1().Services(testNamespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, "waiting for the listener to close", func() error {
			conn, err := net.DialTimeout("tcp", lbAddr, time.Second)
			if err == nil {
				conn.Close()
				return fmt.Errorf("%s still accepts connections", lbAddr)
			}
			return nil
		})
	})

	t.Run("Hostname mode", func(t *testing.T) {
		hosts := filepath.Join(t.TempDir(), "hosts")
		a := startEchoServer(t, host, "a")
		port := freePort(t)
		createService(t, client, newService("echo-host", port))
		if _, err := client.DiscoveryV1().EndpointSlices(testNamespace).Create(ctx, newSlice(t, "echo-host", "echo-host-1", a), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		stop := startController(t, client, Config{Mode: ModeHostname, Range: integrationRange, HostsFile: hosts})
		const hostname = "echo-host." + testNamespace + ".elb.sealion.test"
		waitForIngress(t, client, "echo-host", func(ing []corev1.LoadBalancerIngress) bool {
			return len(ing) == 1 && ing[0].Hostname == hostname && ing[0].IP == ""
		})
		entries, err := hostsFile(hosts).Read()
		if err != nil {
			t.Fatal(err)
		}
		ip, ok := entries[hostname]
		if !ok || !integrationRange.Contains(ip) {
			t.Fatalf("hosts block = %v; want %s in %s", entries, hostname, integrationRange)
		}
		eventually(t, "connecting through the load balancer", func() error {
			c, err := dialEcho(addr(ip.String(), port))
			if err != nil {
				return err
			}
			defer c.conn.Close()
			return c.roundTrip("hello")
		})

		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if content, err := os.ReadFile(hosts); err != nil || len(content) != 0 {
			t.Fatalf("hosts file after shutdown = %q, %v; want it empty", content, err)
		}
	})
}

func createService(t *testing.T, client kubernetes.Interface, svc *corev1.Service) {
	t.Helper()
	if _, err := client.CoreV1().Services(testNamespace).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Service %s: %v", svc.Name, err)
	}
}
