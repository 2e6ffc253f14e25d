package conformance

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// controlPlaneProcesses are the executables of a cluster's control plane (argv[0]'s base name).
var controlPlaneProcesses = []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler"}

// cpuSplit is this machine's CPUs divided between a cluster's control plane and everything else,
// with CPUs of their own for some processes where the machine has enough.
type cpuSplit struct {
	controlPlane, rest []int
	// apartProcesses asked for CPUs of their own; apart are those CPUs, none on a machine of
	// fewer than three, where they share rest.
	apartProcesses []string
	apart          []int
	// restore sets every thread this split moved back to the CPUs it had.
	restore func()
}

func (s cpuSplit) String() string {
	text := fmt.Sprintf("control plane (%s) on CPUs %v", strings.Join(controlPlaneProcesses, ", "), s.controlPlane)
	switch {
	case len(s.apart) > 0:
		text += fmt.Sprintf(", %s on %v", strings.Join(s.apartProcesses, ", "), s.apart)
	case len(s.apartProcesses) > 0:
		text += fmt.Sprintf(", %s sharing the others' CPUs (a CPU of their own needs a third)", strings.Join(s.apartProcesses, ", "))
	}
	return text + fmt.Sprintf(", every other process on %v", s.rest)
}

// partitionCPUs divides cpus as splitCPUs says: halves, or thirds when a third group is asked for
// and there are three CPUs or more (the first third to the control plane, the next to the
// processes apart, the rest, the remainder included, to everything else).
func partitionCPUs(cpus []int, apart bool) (controlPlane, own, rest []int) {
	if apart && len(cpus) >= 3 {
		third := len(cpus) / 3
		return cpus[:third], cpus[third : 2*third], cpus[2*third:]
	}
	return cpus[:len(cpus)/2], nil, cpus[len(cpus)/2:]
}

// splitCPUs pins the threads of every control plane process to the first half of this machine's
// CPUs and those of every other user process (the worker node's kubelet, containerd and pods,
// the simulated load balancer, this test) to the second half, as in a cluster whose control
// plane runs on machines of its own: what a worker's pod spends is then not taken from the
// kube-apiserver. The load generator (this test) shares the worker's CPUs with the proxy, which
// handicaps the proxy's path and not the direct one: beside the control plane instead, it took the
// kube-apiserver's CPU on the direct path only, and the proxy measured 1.7 times faster than
// direct. Threads started later inherit their creator's CPUs. It needs 2 CPUs or more.
//
// The processes named apart (by argv[0]'s base name) get a third of the CPUs of their own on a
// machine of three or more, as a pod on a worker of its own; on two they stay with the others.
func splitCPUs(apart ...string) (cpuSplit, error) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(1, &all); err != nil {
		return cpuSplit{}, fmt.Errorf("the CPUs of PID 1: %w", err)
	}
	var cpus []int
	for cpu := range 1024 {
		if all.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	if len(cpus) < 2 {
		return cpuSplit{}, fmt.Errorf("this machine has %d CPU, and the control plane needs one of its own", len(cpus))
	}
	s := cpuSplit{apartProcesses: apart}
	s.controlPlane, s.apart, s.rest = partitionCPUs(cpus, len(apart) > 0)
	controlPlane, own, rest := cpuSetOf(s.controlPlane), cpuSetOf(s.apart), cpuSetOf(s.rest)

	saved := map[int]unix.CPUSet{}
	s.restore = func() {
		for tid, set := range saved {
			_ = unix.SchedSetaffinity(tid, &set) // a thread gone since needs nothing
		}
	}
	procs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return cpuSplit{}, err
	}
	var errs []error
	found := map[string]bool{}
	for _, dir := range procs {
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil || len(cmdline) == 0 {
			continue // gone, or a kernel thread, whose CPUs are the kernel's
		}
		name := filepath.Base(strings.SplitN(string(cmdline), "\x00", 2)[0])
		target := rest
		switch {
		case slices.Contains(controlPlaneProcesses, name):
			target, found[name] = controlPlane, true
		case slices.Contains(apart, name):
			found[name] = true
			if len(s.apart) > 0 {
				target = own
			}
		}
		tasks, err := os.ReadDir(filepath.Join(dir, "task"))
		if err != nil {
			continue
		}
		for _, task := range tasks {
			tid, err := strconv.Atoi(task.Name())
			if err != nil {
				continue
			}
			var was unix.CPUSet
			if unix.SchedGetaffinity(tid, &was) != nil {
				continue // gone
			}
			if err := unix.SchedSetaffinity(tid, &target); err != nil {
				if !errors.Is(err, unix.ESRCH) {
					errs = append(errs, fmt.Errorf("pinning thread %d of %s: %w", tid, name, err))
				}
				continue
			}
			saved[tid] = was
		}
	}
	for _, name := range append(controlPlaneProcesses[:2:2], apart...) {
		if !found[name] {
			errs = append(errs, fmt.Errorf("no %s process on this machine to pin: is the cluster here?", name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		s.restore()
		return cpuSplit{}, err
	}
	return s, nil
}

func cpuSetOf(cpus []int) unix.CPUSet {
	var set unix.CPUSet
	for _, cpu := range cpus {
		set.Set(cpu)
	}
	return set
}
