// Package hostcheck says, before any cluster starts, why a Kubernetes minor cannot run on this
// machine, so a matrix cell reports the reason and the setting that would change it instead of
// failing deep inside a kubelet log. The rules are data: one per known policy of a kubelet
// release about the host it runs on.
package hostcheck

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Host is what the rules look at.
type Host struct {
	// CgroupV1 means /sys/fs/cgroup is not the cgroup v2 unified hierarchy (hybrid counts as v1,
	// as it does for the kubelet).
	CgroupV1 bool
	// Containerd is the version of the containerd on PATH ("1.6.20"), empty when there is none.
	Containerd string
}

func (h Host) String() string {
	cg := "cgroup v2"
	if h.CgroupV1 {
		cg = "cgroup v1"
	}
	ctr := "no containerd"
	if h.Containerd != "" {
		ctr = "containerd " + h.Containerd
	}
	return cg + ", " + ctr
}

// Rule is a kubelet policy about hosts, from some minor on.
type Rule struct {
	// FromMinor is the first minor of Kubernetes 1.x the rule applies to.
	FromMinor int
	// Blocks reports whether the host falls foul of the rule.
	Blocks func(Host) bool
	// Reason says why, in terms of the host; Remedy what makes the version run.
	Reason, Remedy string
}

// Rules are the known policies. (Kubelets from 1.35 on refuse cgroup v1 hosts by default, KEP-5573;
// no rule for it, since our providers' kubelets set failCgroupV1: false.)
var Rules = []Rule{
	{
		FromMinor: 38,
		Blocks:    func(h Host) bool { return h.Containerd != "" && major(h.Containerd) < 2 },
		Reason: "the kubelet of Kubernetes 1.38 and later takes its cgroup driver only from the runtime's " +
			"RuntimeConfig call (KEP-4033), which containerd 1.x does not implement",
		Remedy: "install containerd 2.0 or later",
	},
}

// Blocker returns why Kubernetes 1.minor cannot run on h, with the remedy; empty when no rule
// stops it.
func (h Host) Blocker(minor int) string {
	var reasons []string
	for _, r := range Rules {
		if minor >= r.FromMinor && r.Blocks(h) {
			reasons = append(reasons, fmt.Sprintf("%s; to run it: %s", r.Reason, r.Remedy))
		}
	}
	return strings.Join(reasons, ". ")
}

// Detect looks at this machine.
func Detect(ctx context.Context) Host {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	h := Host{CgroupV1: err != nil}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "containerd", "--version").Output(); err == nil {
		h.Containerd = containerdVersion(string(out))
	}
	return h
}

// containerdVersion reads `containerd --version`: "containerd github.com/containerd/containerd
// 1.6.20~ds1 1.6.20~ds1-1+deb12u3" (Debian) or "containerd containerd.io v2.1.4 <commit>".
func containerdVersion(out string) string {
	f := strings.Fields(out)
	if len(f) < 3 {
		return ""
	}
	v := strings.TrimPrefix(f[2], "v")
	end := strings.IndexFunc(v, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
	if end >= 0 {
		v = v[:end]
	}
	return v
}

func major(v string) int {
	m, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(m)
	if err != nil {
		return 0
	}
	return n
}
