// Command hello is the workload of the providers' cluster tests: it proves that a pod started
// from a loaded image archive gets cluster DNS and reaches a Service address, then exits.
package main

import (
	"fmt"
	"net"
	"os"
	"time"
)

func main() {
	addrs, err := net.LookupHost("kubernetes.default.svc.cluster.local")
	if err != nil {
		fmt.Println("dns lookup failed:", err)
		os.Exit(1)
	}
	fmt.Println("kubernetes service resolves to", addrs[0])
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(addrs[0], "443"), 10*time.Second)
	if err != nil {
		fmt.Println("dial failed:", err)
		os.Exit(1)
	}
	conn.Close()
	// The tests look for this line (testimage.HelloGreeting).
	fmt.Println("hello from sealion")
}
