package hostcheck

import (
	"context"
	"strings"
	"testing"
)

func TestBlocker(t *testing.T) {
	t.Parallel()
	v1 := Host{CgroupV1: true, Containerd: "1.6.20"}
	for _, tc := range []struct {
		host  Host
		minor int
		want  []string // substrings; none means no blocker
	}{
		{v1, 33, nil},
		{v1, 34, nil},
		{v1, 35, nil}, // our kubelets set failCgroupV1: false
		{v1, 38, []string{"containerd 2.0"}},
		{Host{Containerd: "2.1.4"}, 38, nil},
		{Host{}, 40, nil}, // containerd unknown: nothing to say
	} {
		got := tc.host.Blocker(tc.minor)
		if len(tc.want) == 0 && got != "" {
			t.Errorf("%v 1.%d: blocker %q, want none", tc.host, tc.minor, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%v 1.%d: blocker %q lacks %q", tc.host, tc.minor, got, w)
			}
		}
	}
}

func TestContainerdVersion(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3\n": "1.6.20",
		"containerd containerd.io v2.1.4 75cb2b7193e4e490e9fbdc236c0e811ccaba3376\n":    "2.1.4",
		"garbage": "",
	} {
		if got := containerdVersion(in); got != want {
			t.Errorf("containerdVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDetect(t *testing.T) {
	t.Parallel()
	// Whatever the machine, Detect must describe it without failing.
	if s := Detect(context.Background()).String(); !strings.Contains(s, "cgroup v") {
		t.Errorf("String() = %q", s)
	}
}
