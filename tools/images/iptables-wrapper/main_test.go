package main

import "testing"

func TestHasHint(t *testing.T) {
	tests := []struct {
		name, dump string
		want       bool
	}{
		{"kubelet hint chain", "*mangle\n:PREROUTING ACCEPT [0:0]\n:KUBE-IPTABLES-HINT - [0:0]\nCOMMIT\n", true},
		{"kubelet canary chain", "*mangle\n:KUBE-KUBELET-CANARY - [0:0]\nCOMMIT\n", true},
		{"other chains only", "*mangle\n:PREROUTING ACCEPT [0:0]\n:KUBE-IPTABLES-HINTS - [0:0]\n-A PREROUTING -j KUBE-IPTABLES-HINT\nCOMMIT\n", false},
		{"empty (backend absent)", "", false},
	}
	for _, tt := range tests {
		if got := hasHint(tt.dump); got != tt.want {
			t.Errorf("%s: hasHint = %v, want %v", tt.name, got, tt.want)
		}
	}
}
