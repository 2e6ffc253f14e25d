package providers

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
)

// HostIPv4 is this machine's own address for clusters that run on it: the IPv4 address of the
// interface with the default route, else of the first interface that is up, not loopback and not
// a bridge of ours. Nodes register with it (the kubelet rejects loopback) and pods reach it through
// their gateway, so fixtures serving pods (Dex, LDAP) listen on it too.
func HostIPv4() (string, error) {
	if f, err := os.Open("/proc/net/route"); err == nil {
		defer f.Close()
		iface := defaultRouteInterface(f)
		if ip := interfaceIPv4(iface); ip != "" {
			return ip, nil
		}
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("listing network interfaces: %w", err)
	}
	for _, i := range ifaces {
		if i.Flags&net.FlagUp != 0 && i.Flags&net.FlagLoopback == 0 && !strings.HasPrefix(i.Name, "sealion") {
			if ip := interfaceIPv4(i.Name); ip != "" {
				return ip, nil
			}
		}
	}
	return "", fmt.Errorf("no IPv4 address on a non-loopback interface for the node")
}

// defaultRouteInterface reads /proc/net/route and returns the interface of destination 0.0.0.0/0.
func defaultRouteInterface(routes io.Reader) string {
	sc := bufio.NewScanner(routes)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 8 && f[1] == "00000000" && f[7] == "00000000" {
			return f[0]
		}
	}
	return ""
}

func interfaceIPv4(name string) string {
	if name == "" {
		return ""
	}
	i, err := net.InterfaceByName(name)
	if err != nil {
		return ""
	}
	addrs, err := i.Addrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() {
			return ipn.IP.String()
		}
	}
	return ""
}
