package hoststate

import (
	"path/filepath"
	"reflect"
	"testing"
)

func TestParseRules(t *testing.T) {
	t.Parallel()
	out := `-P INPUT ACCEPT
-P FORWARD DROP
-N CNI-FORWARD
-N KUBE-FIREWALL
-N DOCKER
-A INPUT -j KUBE-FIREWALL
-A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD
-A FORWARD -j DOCKER
-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP
`
	rs, err := parseRules(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"CNI-FORWARD", "KUBE-FIREWALL", "DOCKER"}; !reflect.DeepEqual(rs.chains, want) {
		t.Errorf("chains = %q, want %q", rs.chains, want)
	}
	if len(rs.rules) != 4 {
		t.Fatalf("rules = %q, want 4", rs.rules)
	}
	if want := []string{"-A", "FORWARD", "-m", "comment", "--comment", "CNI firewall plugin rules", "-j", "CNI-FORWARD"}; !reflect.DeepEqual(rs.rules[1], want) {
		t.Errorf("quoted rule = %q, want %q", rs.rules[1], want)
	}
	doomed := []string{"CNI-FORWARD", "KUBE-FIREWALL"}
	var jumping []string
	for _, r := range rs.rules {
		if jumpsTo(r, doomed) {
			jumping = append(jumping, r[1])
		}
	}
	if want := []string{"INPUT", "FORWARD"}; !reflect.DeepEqual(jumping, want) {
		t.Errorf("rules jumping to owned chains are in %q, want %q", jumping, want)
	}
}

func TestSplitWords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "-A X -j Y", want: []string{"-A", "X", "-j", "Y"}},
		{in: `-A X --comment "a \"b\" c"  -j Y`, want: []string{"-A", "X", "--comment", `a "b" c`, "-j", "Y"}},
		{in: `--comment ""`, want: []string{"--comment", ""}},
		{in: "", want: nil},
		{in: `-A "open`, wantErr: true},
	}
	for _, tt := range tests {
		got, err := splitWords(tt.in)
		if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestIsOwnedChain(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"KUBE-SERVICES": true, "CNI-HOSTPORT-DNAT": true, "CNI-3f2a": true,
		"DOCKER": false, "FORWARD": false, "KUBERNETES": false,
	} {
		if got := isOwnedChain(name); got != want {
			t.Errorf("isOwnedChain(%s) = %v, want %v", name, got, want)
		}
	}
}

func TestUnescapeMountPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/var/lib/kubelet":             "/var/lib/kubelet",
		`/var/lib/kubelet/pods/a\040b`: "/var/lib/kubelet/pods/a b",
		`/x\134y`:                      `/x\y`,
		`/trailing\04`:                 `/trailing\04`,
	} {
		if got := unescapeMountPath(in); got != want {
			t.Errorf("unescapeMountPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "host.json")
	s := &Snapshot{
		Existing: []string{"/etc/cni"},
		Sysctls:  map[string]string{"net/ipv4/ip_forward": "0"},
		NetNS:    []string{"other"},
		Chains:   []string{"iptables filter KUBE-X"},
	}
	if err := s.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Errorf("Load = %+v, want %+v", got, s)
	}
	if !got.existed("/etc/cni") || got.existed("/etc/kubernetes") {
		t.Error("existed does not follow the snapshot")
	}
}
