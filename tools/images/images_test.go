package main

import "testing"

func TestBackendCommand(t *testing.T) {
	tests := []struct{ cmd, backend, want string }{
		{"iptables", "nft", "iptables-nft"},
		{"iptables-save", "legacy", "iptables-legacy-save"},
		{"iptables-restore", "nft", "iptables-nft-restore"},
		{"ip6tables", "legacy", "ip6tables-legacy"},
		{"ip6tables-restore", "nft", "ip6tables-nft-restore"},
	}
	for _, tt := range tests {
		if got := backendCommand(tt.cmd, tt.backend); got != tt.want {
			t.Errorf("backendCommand(%q, %q) = %q, want %q", tt.cmd, tt.backend, got, tt.want)
		}
	}
}
