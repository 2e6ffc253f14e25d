package hoststate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// cgroupRoot is the cgroup v1 mount of these machines; each controller is a directory below it.
const cgroupRoot = "/sys/fs/cgroup"

// kubepodsCgroups lists the kubelet's top cgroup (cgroupfs driver) in each hierarchy.
func kubepodsCgroups() []string {
	found, _ := filepath.Glob(filepath.Join(cgroupRoot, "*", "kubepods"))
	if _, err := os.Stat(filepath.Join(cgroupRoot, "kubepods")); err == nil { // cgroup v2
		found = append(found, filepath.Join(cgroupRoot, "kubepods"))
	}
	return found
}

// cgroupDirsDeepestFirst lists root and every cgroup below it, children before parents.
func cgroupDirsDeepestFirst(root string) []string {
	var dirs []string
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
	return dirs
}

// killCgroupProcesses SIGKILLs every process in the cgroup tree below root.
func killCgroupProcesses(root string) {
	for _, dir := range cgroupDirsDeepestFirst(root) {
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// processesMentioning returns the pids (not ours) whose command line contains marker.
func processesMentioning(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.Contains(cmdline, []byte(marker)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// mountPointsUnder returns the mount points at or below any of roots, deepest first.
func mountPointsUnder(roots ...string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	defer f.Close()
	var found []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountPath(fields[4])
		for _, root := range roots {
			if mp == root || strings.HasPrefix(mp, strings.TrimSuffix(root, "/")+"/") {
				found = append(found, mp)
				break
			}
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return strings.Count(found[i], "/") > strings.Count(found[j], "/") })
	return found, sc.Err()
}

// unescapeMountPath decodes the octal escapes (\040 for space) of /proc/self/mountinfo.
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmount detaches a mount point, lazily when it is busy.
func unmount(path string) error {
	err := syscall.Unmount(path, 0)
	if err == nil || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOENT) {
		return nil
	}
	if err := syscall.Unmount(path, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("unmounting %s: %w", path, err)
	}
	return nil
}

func linkExists(device string) bool {
	_, err := os.Lstat(filepath.Join("/sys/class/net", device))
	return err == nil
}
