package hoststate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"sealion.dev/providers/internal/command"
	"sealion.dev/providers/internal/hostproc"
)

// Cluster names what belongs to one cluster besides the snapshot's well-known places.
type Cluster struct {
	// Marker is a string in the command line of every daemon of the cluster (its work directory);
	// processes mentioning it are killed. Mounts below it are removed too.
	Marker string
	// Links are network devices the cluster made (the CNI bridge, the Service network's sink).
	Links []string
	// Files are files the cluster wrote into directories that may have existed before.
	Files []string
}

// Restore removes what the cluster added since the snapshot and sets kernel settings back. It
// goes on after a failed step and returns every failure, plus whatever Leftovers still finds.
func Restore(ctx context.Context, run command.Runner, before *Snapshot, c Cluster) error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}

	// Processes first, so nothing re-creates what follows: the cluster's daemons and shims,
	// then whatever still runs in the pod cgroups.
	if c.Marker != "" {
		killAndWait(processesMentioning(c.Marker))
	}
	for _, cg := range kubepodsCgroups() {
		if !slices.Contains(before.Cgroups, cg) {
			killCgroupProcesses(cg)
		}
	}

	roots := []string{"/var/lib/kubelet", netnsDir, "/run/containerd"}
	if c.Marker != "" {
		roots = append(roots, c.Marker)
	}
	mounts, err := mountPointsUnder(roots...)
	add(err)
	for _, mp := range mounts {
		if strings.HasPrefix(mp, netnsDir+"/") && slices.Contains(before.NetNS, filepath.Base(mp)) {
			continue
		}
		add(unmount(mp))
	}
	now, err := listNetNS()
	add(err)
	for _, ns := range now {
		if !slices.Contains(before.NetNS, ns) {
			add(removeIfExists(filepath.Join(netnsDir, ns)))
		}
	}

	errs = append(errs, removeNewChains(ctx, run, before.Chains)...)
	for _, link := range c.Links {
		if linkExists(link) {
			add(run.Run(ctx, "ip", "link", "delete", link))
		}
	}

	for _, cg := range kubepodsCgroups() {
		if slices.Contains(before.Cgroups, cg) {
			continue
		}
		for _, dir := range cgroupDirsDeepestFirst(cg) {
			if err := syscall.Rmdir(dir); err != nil && !errors.Is(err, syscall.ENOENT) {
				add(fmt.Errorf("removing cgroup %s: %w", dir, err))
			}
		}
	}

	for _, f := range c.Files {
		add(removeIfExists(f))
	}
	// Children before parents (/etc/cni/net.d before /etc/cni).
	for i := len(watchedPaths) - 1; i >= 0; i-- {
		if p := watchedPaths[i]; !before.existed(p) {
			add(removeIfExists(p))
		}
	}

	for key, want := range before.Sysctls {
		path := filepath.Join("/proc/sys", key)
		if got, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(got)) != want {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				add(fmt.Errorf("restoring %s to %s: %w", key, want, err))
			}
		}
	}

	if left := Leftovers(ctx, run, before, c); len(left) > 0 {
		errs = append(errs, fmt.Errorf("still on the host after clean-up: %s", strings.Join(left, "; ")))
	}
	return errors.Join(errs...)
}

// Leftovers lists, one line each, what differs from the snapshot in what the cluster may change.
func Leftovers(ctx context.Context, run command.Runner, before *Snapshot, c Cluster) []string {
	var left []string
	if c.Marker != "" {
		for _, pid := range processesMentioning(c.Marker) {
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			left = append(left, fmt.Sprintf("process %d (%s)", pid, strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " ")))
		}
	}
	roots := []string{"/var/lib/kubelet", "/run/containerd"}
	if c.Marker != "" {
		roots = append(roots, c.Marker)
	}
	if mounts, err := mountPointsUnder(roots...); err == nil {
		for _, mp := range mounts {
			left = append(left, "mount "+mp)
		}
	}
	if now, err := listNetNS(); err == nil {
		for _, ns := range now {
			if !slices.Contains(before.NetNS, ns) {
				left = append(left, "network namespace "+ns)
			}
		}
	}
	if chains, err := ownedChains(); err == nil {
		for _, ch := range chains {
			if !slices.Contains(before.Chains, ch) {
				left = append(left, "iptables chain "+ch)
			}
		}
	}
	for _, link := range c.Links {
		if linkExists(link) {
			left = append(left, "network device "+link)
		}
	}
	for _, cg := range kubepodsCgroups() {
		if !slices.Contains(before.Cgroups, cg) {
			left = append(left, "cgroup "+cg)
		}
	}
	for _, f := range c.Files {
		if _, err := os.Lstat(f); err == nil {
			left = append(left, "file "+f)
		}
	}
	for _, p := range watchedPaths {
		if _, err := os.Lstat(p); err == nil && !before.existed(p) {
			left = append(left, "path "+p)
		}
	}
	for key, want := range before.Sysctls {
		if got, err := os.ReadFile(filepath.Join("/proc/sys", key)); err == nil && strings.TrimSpace(string(got)) != want {
			left = append(left, fmt.Sprintf("sysctl %s=%s (was %s)", key, strings.TrimSpace(string(got)), want))
		}
	}
	return left
}

// killAndWait SIGKILLs pids and waits briefly for them to go.
func killAndWait(pids []int) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for time.Now().Before(deadline) {
			if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
				break
			}
			if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && hostproc.IsZombie(stat) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func removeIfExists(path string) error {
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	return nil
}
