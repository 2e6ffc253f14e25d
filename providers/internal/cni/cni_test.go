package cni

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"testing"
)

func TestRenderBridge(t *testing.T) {
	t.Parallel()
	b := Bridge{Network: "sealion-pods", Device: "sealion0", Subnet: netip.MustParsePrefix("10.244.0.7/24"), IPAMDataDir: "/w/ipam"}
	data, err := b.Render()
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	var types []string
	for _, p := range got["plugins"].([]any) {
		types = append(types, p.(map[string]any)["type"].(string))
	}
	if want := []string{"bridge", "firewall", "portmap", "loopback"}; !reflect.DeepEqual(types, want) {
		t.Errorf("plugins = %v, want %v", types, want)
	}
	bridge := got["plugins"].([]any)[0].(map[string]any)
	rangeJSON, _ := json.Marshal(bridge["ipam"].(map[string]any)["ranges"])
	if want := `[[{"gateway":"10.244.0.1","subnet":"10.244.0.0/24"}]]`; string(rangeJSON) != want {
		t.Errorf("ranges = %s, want %s", rangeJSON, want)
	}
	if bridge["bridge"] != "sealion0" || bridge["ipMasq"] != true || bridge["isGateway"] != true {
		t.Errorf("bridge plugin = %v", bridge)
	}
	firewall := got["plugins"].([]any)[1].(map[string]any)
	if firewall["backend"] != "iptables" {
		t.Errorf("firewall plugin = %v, want the iptables backend", firewall)
	}
	if b.FileName() != "10-sealion-pods.conflist" {
		t.Errorf("FileName = %s", b.FileName())
	}
}

func TestRenderRejects(t *testing.T) {
	t.Parallel()
	ok := Bridge{Network: "n", Device: "br0", Subnet: netip.MustParsePrefix("10.0.0.0/24"), IPAMDataDir: "/d"}
	tests := map[string]func(b *Bridge){
		"long device": func(b *Bridge) { b.Device = "a-very-long-bridge-name" },
		"no device":   func(b *Bridge) { b.Device = "" },
		"ipv6 subnet": func(b *Bridge) { b.Subnet = netip.MustParsePrefix("fd00::/64") },
		"no subnet":   func(b *Bridge) { b.Subnet = netip.Prefix{} },
		"no ipam dir": func(b *Bridge) { b.IPAMDataDir = "" },
		"no network":  func(b *Bridge) { b.Network = "" },
	}
	for name, mutate := range tests {
		b := ok
		mutate(&b)
		if _, err := b.Render(); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}
