package containerd

import (
	"slices"
	"strings"
	"testing"
)

func TestRenderConfig(t *testing.T) {
	t.Parallel()
	cfg := Config{Dir: "/var/tmp/sealion/c1/containerd", CNIConfDir: "/etc/cni/net.d", CNIBinDir: "/usr/lib/cni",
		SandboxImage: "registry.k8s.io/pause:3.10"}
	out, err := cfg.Render()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`root = "/var/tmp/sealion/c1/containerd/root"`,
		`state = "/var/tmp/sealion/c1/containerd/state"`,
		`address = "/var/tmp/sealion/c1/containerd/containerd.sock"`,
		`address = "/var/tmp/sealion/c1/containerd/containerd.sock.ttrpc"`,
		`path = "/var/tmp/sealion/c1/containerd/opt"`,
		`sandbox_image = "registry.k8s.io/pause:3.10"`,
		"restrict_oom_score_adj = true",
		"SystemdCgroup = false",
		`bin_dir = "/usr/lib/cni"`,
		`conf_dir = "/etc/cni/net.d"`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("config lacks %q:\n%s", want, out)
		}
	}
}

func TestRenderRejectsIncompleteConfig(t *testing.T) {
	t.Parallel()
	if _, err := (Config{Dir: "/x"}).Render(); err == nil {
		t.Fatal("want an error for a config without CNI directories and sandbox image")
	}
}

func TestTOMLString(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		`/plain/path`:   `"/plain/path"`,
		`a"b\c`:         `"a\"b\\c"`,
		"tab\there":     `"tab\u0009here"`,
		"/päth/ünïcode": `"/päth/ünïcode"`,
	}
	for in, want := range tests {
		if got := tomlString(in); got != want {
			t.Errorf("tomlString(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestImportArgs(t *testing.T) {
	t.Parallel()
	got := strings.Join(ImportArgs("/run/x.sock", "/cache/images/v1.33.13/etcd.tar"), " ")
	want := "ctr --address /run/x.sock --namespace k8s.io images import --all-platforms /cache/images/v1.33.13/etcd.tar"
	if got != want {
		t.Errorf("ImportArgs = %q, want %q", got, want)
	}
}

func TestRunningTaskPIDs(t *testing.T) {
	t.Parallel()
	tasks := `TASK                                                                PID     STATUS
aaa                                                                 101     RUNNING
bbb                                                                 102     STOPPED
ccc                                                                 103     RUNNING
ddd                                                                 104     RUNNING
`
	got := runningTaskPIDs(tasks, []string{"aaa", "bbb", "ddd", "zzz"})
	if !slices.Equal(got, []int{101, 104}) {
		t.Errorf("runningTaskPIDs = %v, want [101 104]: the running tasks of the listed containers", got)
	}
}
