package providers

import (
	"strings"
	"testing"
)

func TestDefaultRouteInterface(t *testing.T) {
	t.Parallel()
	routes := "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n" +
		"eth1\t0000A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n" +
		"eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
	if got := defaultRouteInterface(strings.NewReader(routes)); got != "eth0" {
		t.Errorf("defaultRouteInterface = %q, want eth0", got)
	}
	if got := defaultRouteInterface(strings.NewReader("Iface\tDestination\n")); got != "" {
		t.Errorf("no default route: got %q", got)
	}
}
