// Command runc-wrap is an OCI runtime for Docker on machines whose capability bounding set lacks
// capabilities that Docker grants anyway (privileged containers get every capability Docker
// knows). On such a machine runc fails with "unable to apply caps: operation not permitted", so
// kind's privileged node containers cannot start. The wrapper edits what runc is about to apply,
// then runs the real runc with the same arguments:
//
//   - create and run: <bundle>/config.json, the container's spec;
//   - exec: the --process file (`docker exec --privileged`).
//
// It drops the capabilities missing from its own bounding set and, when CAP_SYS_RESOURCE is
// missing (nobody may then lower an oom_score_adj), raises a negative oomScoreAdj to this
// process's own value. Everything else in the JSON is kept as it was.
//
// Register it with dockerd: --add-runtime runc-wrap=<path> --default-runtime runc-wrap. The real
// runc is the first `runc` in PATH, or $RUNC_WRAP_RUNTIME. `runc-wrap --missing-capabilities`
// prints the capabilities it would drop here (nothing where the wrapper is not needed).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// capNames are the Linux capabilities by number (linux/capability.h).
var capNames = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE",
	"CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE",
	"CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT",
	"CAP_SYS_NICE", "CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
	"CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN",
	"CAP_SYSLOG", "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
}

const capSysResource = "CAP_SYS_RESOURCE"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "runc-wrap: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	missing, err := missingCapabilities()
	if err != nil {
		return err
	}
	if len(args) == 1 && args[0] == "--missing-capabilities" {
		var names []string
		for _, n := range capNames {
			if missing[n] {
				names = append(names, n)
			}
		}
		if len(names) > 0 {
			fmt.Println(strings.Join(names, " "))
		}
		return nil
	}
	if len(missing) > 0 {
		if err := adjust(args, missing); err != nil {
			return err
		}
	}
	runc := os.Getenv("RUNC_WRAP_RUNTIME")
	if runc == "" {
		if runc, err = exec.LookPath("runc"); err != nil {
			return fmt.Errorf("finding the real runc: %w", err)
		}
	}
	return syscall.Exec(runc, append([]string{"runc"}, args...), os.Environ())
}

// adjust rewrites the spec or process file that the runc command line names.
func adjust(args []string, missing map[string]bool) error {
	cmd := parseArgs(args)
	floor := 0
	if missing[capSysResource] {
		floor = ownOOMScoreAdj()
	}
	switch cmd.sub {
	case "create", "run":
		bundle := cmd.bundle
		if bundle == "" {
			bundle = "."
		}
		return rewriteJSON(filepath.Join(bundle, "config.json"), func(spec map[string]any) error {
			process, _ := spec["process"].(map[string]any)
			if process == nil {
				return nil
			}
			return fixProcess(process, missing, missing[capSysResource], floor)
		})
	case "exec":
		if cmd.process == "" {
			return nil // the process comes from the command line, without extra capabilities
		}
		return rewriteJSON(cmd.process, func(process map[string]any) error {
			return fixProcess(process, missing, missing[capSysResource], floor)
		})
	}
	return nil
}

// command is what adjust needs from a runc command line.
type command struct {
	sub     string // create, run, exec, ...
	bundle  string // --bundle of create and run
	process string // --process of exec
}

// globalWithValue are runc's global options that take a value.
var globalWithValue = map[string]bool{"--root": true, "--log": true, "--log-format": true, "--criu": true, "--rootless": true}

func parseArgs(args []string) command {
	var c command
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			c.sub = a
			i++
			break
		}
		if globalWithValue[a] {
			i++
		}
	}
	for ; i < len(args); i++ {
		a := args[i]
		for _, opt := range []struct {
			names []string
			dst   *string
		}{{[]string{"--bundle", "-b"}, &c.bundle}, {[]string{"--process", "-p"}, &c.process}} {
			for _, n := range opt.names {
				switch {
				case a == n && i+1 < len(args):
					*opt.dst = args[i+1]
				case strings.HasPrefix(a, n+"="):
					*opt.dst = strings.TrimPrefix(a, n+"=")
				}
			}
		}
	}
	return c
}

// fixProcess drops missing capabilities from every set and raises a negative oomScoreAdj to floor.
func fixProcess(process map[string]any, missing map[string]bool, clampOOM bool, floor int) error {
	if caps, ok := process["capabilities"].(map[string]any); ok {
		for set, v := range caps {
			list, ok := v.([]any)
			if !ok {
				continue
			}
			kept := make([]any, 0, len(list))
			for _, c := range list {
				if name, ok := c.(string); ok && missing[name] {
					continue
				}
				kept = append(kept, c)
			}
			caps[set] = kept
		}
	}
	if !clampOOM {
		return nil
	}
	if v, ok := process["oomScoreAdj"].(json.Number); ok {
		adj, err := v.Int64()
		if err != nil {
			return fmt.Errorf("oomScoreAdj %q: %w", v, err)
		}
		if adj < int64(floor) {
			process["oomScoreAdj"] = json.Number(strconv.Itoa(floor))
		}
	}
	return nil
}

// rewriteJSON decodes path keeping numbers exact (specs hold 64-bit limits), lets fix change it,
// and writes it back in place.
func rewriteJSON(path string, fix func(map[string]any) error) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("parsing %s: %w", path, err)
	}
	if err := fix(doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, info.Mode().Perm())
}

// missingCapabilities are the known capabilities up to the kernel's last one that are not in
// this process's bounding set.
func missingCapabilities() (map[string]bool, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, err
	}
	bounding, err := boundingSet(status)
	if err != nil {
		return nil, err
	}
	last := len(capNames) - 1
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n < last {
			last = n
		}
	}
	return missingFrom(bounding, last), nil
}

func missingFrom(bounding uint64, last int) map[string]bool {
	missing := map[string]bool{}
	for i := 0; i <= last && i < len(capNames); i++ {
		if bounding&(1<<i) == 0 {
			missing[capNames[i]] = true
		}
	}
	return missing
}

// boundingSet reads CapBnd from the text of /proc/<pid>/status.
func boundingSet(status []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		if hex, ok := strings.CutPrefix(sc.Text(), "CapBnd:"); ok {
			return strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		}
	}
	return 0, errors.New("no CapBnd line in /proc/self/status")
}

// ownOOMScoreAdj is this process's oom_score_adj: without CAP_SYS_RESOURCE a child may not go
// below it.
func ownOOMScoreAdj() int {
	b, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return n
}
