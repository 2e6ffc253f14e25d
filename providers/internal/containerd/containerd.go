// Package containerd runs Debian's containerd as a plain child process with a configuration of
// our own (its own root, state and socket, so it never meets a system containerd) and talks to it
// with ctr: image import into the Kubernetes namespace and removal of every container.
package containerd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"sealion.dev/providers/internal/command"
	"sealion.dev/providers/internal/daemon"
)

// Namespace is the containerd namespace the CRI plugin, and so the kubelet, uses.
const Namespace = "k8s.io"

const (
	startTimeout = 30 * time.Second
	stopGrace    = 10 * time.Second
)

// Config places a containerd instance and wires its CRI plugin to the CNI configuration.
type Config struct {
	// Dir holds config.toml, the root and state directories and the socket.
	// Keep it short: the socket path must fit in 108 bytes.
	Dir string
	// CNIConfDir and CNIBinDir are where the CRI plugin finds network configurations and plugins.
	CNIConfDir, CNIBinDir string
	// SandboxImage is the pause image of pod sandboxes; it must be imported, as nothing is pulled.
	SandboxImage string
}

// Socket is the gRPC address of the instance.
func (c Config) Socket() string { return filepath.Join(c.Dir, "containerd.sock") }

// ConfigFile is where Start writes the rendered configuration.
func (c Config) ConfigFile() string { return filepath.Join(c.Dir, "config.toml") }

// configTemplate is containerd 1.6's version 2 configuration. Settings that matter here:
//   - restrict_oom_score_adj: root cannot lower oom_score_adj on these machines, and without it
//     runc fails every sandbox (the pause container asks for -998).
//   - SystemdCgroup = false: there is no systemd; the kubelet uses the cgroupfs driver too.
//   - the opt plugin's path: its default, /opt/containerd, would be created on the host.
var configTemplate = template.Must(template.New("config.toml").Funcs(template.FuncMap{"q": tomlString}).Parse(
	`version = 2
root = {{q .Root}}
state = {{q .State}}

[grpc]
  address = {{q .Socket}}

[ttrpc]
  address = {{q .TTRPCSocket}}

[plugins."io.containerd.internal.v1.opt"]
  path = {{q .Opt}}

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = {{q .SandboxImage}}
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = {{q .CNIBinDir}}
    conf_dir = {{q .CNIConfDir}}
`))

// Render returns the configuration file's content.
func (c Config) Render() ([]byte, error) {
	if c.Dir == "" || c.CNIConfDir == "" || c.CNIBinDir == "" || c.SandboxImage == "" {
		return nil, fmt.Errorf("containerd config needs Dir, CNIConfDir, CNIBinDir and SandboxImage, got %+v", c)
	}
	var buf bytes.Buffer
	err := configTemplate.Execute(&buf, map[string]string{
		"Root":         filepath.Join(c.Dir, "root"),
		"State":        filepath.Join(c.Dir, "state"),
		"Opt":          filepath.Join(c.Dir, "opt"),
		"Socket":       c.Socket(),
		"TTRPCSocket":  c.Socket() + ".ttrpc",
		"SandboxImage": c.SandboxImage,
		"CNIBinDir":    c.CNIBinDir,
		"CNIConfDir":   c.CNIConfDir,
	})
	return buf.Bytes(), err
}

// tomlString quotes s as a TOML basic string (the JSON escapes are a subset TOML accepts).
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Daemon is a running containerd.
type Daemon struct {
	Config
	proc *daemon.Process
}

// Start writes the configuration and runs containerd until its API answers.
// Its output goes to logFile.
func Start(ctx context.Context, cfg Config, logFile string, run command.Runner) (*Daemon, error) {
	data, err := cfg.Render()
	if err != nil {
		return nil, err
	}
	if len(cfg.Socket()) > 100 {
		return nil, fmt.Errorf("containerd socket path %s is too long for a unix socket; use a shorter directory", cfg.Socket())
	}
	if err := os.MkdirAll(cfg.Dir, 0o711); err != nil {
		return nil, fmt.Errorf("creating containerd directory: %w", err)
	}
	if err := os.WriteFile(cfg.ConfigFile(), data, 0o600); err != nil {
		return nil, fmt.Errorf("writing containerd config: %w", err)
	}
	return launch(ctx, cfg, logFile, run)
}

// Restart runs containerd again on the configuration an earlier Start wrote into dir, for
// example to clean up containers a crashed program left behind.
func Restart(ctx context.Context, dir, logFile string, run command.Runner) (*Daemon, error) {
	cfg := Config{Dir: dir}
	if _, err := os.Stat(cfg.ConfigFile()); err != nil {
		return nil, fmt.Errorf("restarting containerd: %w", err)
	}
	return launch(ctx, cfg, logFile, run)
}

func launch(ctx context.Context, cfg Config, logFile string, run command.Runner) (*Daemon, error) {
	proc, err := daemon.Start(daemon.Spec{
		Name: "containerd", LogFile: logFile,
		Command: func() ([]string, error) { return []string{"containerd", "--config", cfg.ConfigFile()}, nil },
	})
	if err != nil {
		return nil, err
	}
	d := &Daemon{Config: cfg, proc: proc}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for {
		if err := run.Run(ctx, "ctr", "--address", cfg.Socket(), "version"); err == nil {
			return d, nil
		}
		if !proc.Running() {
			_ = proc.Stop(stopGrace)
			return nil, fmt.Errorf("containerd exited during start (see %s): %v", logFile, proc.LastError())
		}
		select {
		case <-ctx.Done():
			_ = proc.Stop(stopGrace)
			return nil, fmt.Errorf("containerd did not answer on %s (see %s): %w", cfg.Socket(), logFile, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop stops the daemon. Containers keep running in their shims; remove them first.
func (d *Daemon) Stop() error { return d.proc.Stop(stopGrace) }

// ImportArgs is the ctr command line importing a docker-archive or OCI tarball into Namespace,
// every platform's content included, as an image index is kept whole (kind loads images so too).
func ImportArgs(socket, archive string) []string {
	return []string{"ctr", "--address", socket, "--namespace", Namespace, "images", "import", "--all-platforms", archive}
}

// ImportImages imports each archive into the instance behind socket, and names the images of an
// OCI layout by digest too (DigestNames), as manifests pinned by digest pull them.
func ImportImages(ctx context.Context, run command.Runner, socket string, archives ...string) error {
	for _, a := range archives {
		names, err := DigestNames(a)
		if err != nil {
			return fmt.Errorf("importing image archive: %w", err)
		}
		argv := ImportArgs(socket, a)
		if err := run.Run(ctx, argv[0], argv[1:]...); err != nil {
			return fmt.Errorf("importing image archive %s: %w", a, err)
		}
		for _, n := range names {
			argv := append([]string{"ctr", "--address", socket}, n.TagArgs()...)
			if err := run.Run(ctx, argv[0], argv[1:]...); err != nil {
				return fmt.Errorf("naming %s by digest: %w", n.Imported, err)
			}
		}
	}
	return nil
}

// ImageNames lists the image references in Namespace.
func ImageNames(ctx context.Context, run command.Runner, socket string) ([]string, error) {
	out, err := run.Output(ctx, "ctr", "--address", socket, "--namespace", Namespace, "images", "list", "--quiet")
	if err != nil {
		return nil, fmt.Errorf("listing images: %w", err)
	}
	return strings.Fields(string(out)), nil
}

// RemoveAllContainers kills every task in Namespace and deletes the containers, so no shim or
// container process outlives the daemon.
func RemoveAllContainers(ctx context.Context, run command.Runner, socket string) error {
	ctr := func(args ...string) ([]byte, error) {
		return run.Output(ctx, "ctr", append([]string{"--address", socket, "--namespace", Namespace}, args...)...)
	}
	out, err := ctr("containers", "list", "--quiet")
	if err != nil {
		return fmt.Errorf("listing containers: %w", err)
	}
	var errs []error
	for _, id := range strings.Fields(string(out)) {
		// A container without a task makes kill and delete fail harmlessly.
		_, _ = ctr("tasks", "kill", "--signal", "SIGKILL", id)
		_, _ = ctr("tasks", "delete", "--force", id)
		if _, err := ctr("containers", "delete", id); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("removing containers: %v", errs)
	}
	return nil
}

// RunningPIDs returns the host pids of the running tasks of the containers in Namespace whose
// Kubernetes container name (the kubelet's io.kubernetes.container.name label) is name.
func RunningPIDs(ctx context.Context, run command.Runner, socket, name string) ([]int, error) {
	ctr := func(args ...string) ([]byte, error) {
		return run.Output(ctx, "ctr", append([]string{"--address", socket, "--namespace", Namespace}, args...)...)
	}
	out, err := ctr("containers", "list", "--quiet", `labels."io.kubernetes.container.name"==`+name)
	if err != nil {
		return nil, fmt.Errorf("listing the containers of %s: %w", name, err)
	}
	ids := strings.Fields(string(out))
	if len(ids) == 0 {
		return nil, nil
	}
	out, err = ctr("tasks", "list")
	if err != nil {
		return nil, fmt.Errorf("listing tasks: %w", err)
	}
	return runningTaskPIDs(string(out), ids), nil
}

// runningTaskPIDs reads `ctr tasks list` (TASK PID STATUS) for the pids of ids' running tasks.
func runningTaskPIDs(tasks string, ids []string) []int {
	var pids []int
	for _, line := range strings.Split(tasks, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "RUNNING" || !slices.Contains(ids, f[0]) {
			continue
		}
		if pid, err := strconv.Atoi(f[1]); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
