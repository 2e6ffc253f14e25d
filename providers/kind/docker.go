package kind

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	kindlog "sigs.k8s.io/kind/pkg/log"

	"sealion.dev/providers/internal/command"
	"sealion.dev/providers/internal/hostproc"
)

// docker runs the Docker CLI, which the kind library drives too.
type docker struct{ run command.Runner }

// errNoEngine means no Docker engine answers.
var errNoEngine = errors.New("no Docker engine answers")

func (d docker) ping(ctx context.Context) error {
	if _, err := exec.LookPath("docker"); err != nil {
		return fmt.Errorf("%w: the docker command is missing (apt-get install docker.io)", errNoEngine)
	}
	if err := d.run.Run(ctx, "docker", "info", "--format", "{{.ServerVersion}}"); err != nil {
		return fmt.Errorf("%w (`make docker-engine ALLOW_HOST_CHANGES=true` starts one): %v", errNoEngine, err)
	}
	return nil
}

// imagePresent reports whether the engine has the image ref.
func (d docker) imagePresent(ctx context.Context, ref string) (bool, error) {
	out, err := d.run.Output(ctx, "docker", "image", "inspect", "--format", "{{.Id}}", ref)
	if err == nil {
		return true, nil
	}
	if strings.Contains(strings.ToLower(string(out)), "no such image") {
		return false, nil
	}
	return false, err
}

func (d docker) pull(ctx context.Context, ref string) error {
	return d.run.Run(ctx, "docker", "pull", ref)
}

// networksOf lists the Docker networks a container is attached to, sorted.
func (d docker) networksOf(ctx context.Context, container string) ([]string, error) {
	out, err := d.run.Output(ctx, "docker", "inspect", "--format", "{{json .NetworkSettings.Networks}}", container)
	if err != nil {
		return nil, err
	}
	var networks map[string]json.RawMessage
	if err := json.Unmarshal(out, &networks); err != nil {
		return nil, fmt.Errorf("parsing the networks of container %s: %w", container, err)
	}
	var names []string
	for n := range networks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// builtinNetworks come with the engine and are never removed.
var builtinNetworks = map[string]bool{"bridge": true, "host": true, "none": true}

// removeNetworkIfUnused removes a network (kind's own, made on first use) once no container is
// attached, taking its bridge and iptables rules with it; kind itself keeps it.
func (d docker) removeNetworkIfUnused(ctx context.Context, network string) error {
	if builtinNetworks[network] {
		return nil
	}
	out, err := d.run.Output(ctx, "docker", "network", "inspect", "--format", "{{len .Containers}}", network)
	if err != nil {
		if strings.Contains(strings.ToLower(string(out)), "not found") {
			return nil
		}
		return err
	}
	if n, err := strconv.Atoi(strings.TrimSpace(string(out))); err != nil || n > 0 {
		return err // still in use by other containers, or an answer we do not understand
	}
	return d.run.Run(ctx, "docker", "network", "rm", network)
}

// startLockHolder starts `docker wait <container>` detached, handing it the locked file: the
// lock then lasts until the container is removed (or the engine stops), whoever removes it.
func startLockHolder(container string, lock *os.File) (int, error) {
	cmd := exec.Command("docker", "wait", container)
	cmd.ExtraFiles = []*os.File{lock}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting docker wait %s to hold the host lock: %w", container, err)
	}
	// Reap it when it exits while this process runs; after that, init does.
	go func() { _ = cmd.Wait() }()
	return cmd.Process.Pid, nil
}

// waitLockHolderGone waits until the lock holder of container has exited, so the lock is free
// when Delete returns; one still waiting after the container went is stopped.
func waitLockHolderGone(ctx context.Context, pid int, container string) error {
	if pid == 0 {
		return nil
	}
	deadline := time.Now().Add(30 * time.Second)
	for isLockHolder(pid, container) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGTERM)
			deadline = time.Now().Add(10 * time.Second)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the host lock holder (pid %d) to exit: %w", pid, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// isLockHolder reports whether pid is still a live `docker wait container` (pids are reused).
func isLockHolder(pid int, container string) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil || hostproc.IsZombie(stat) {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(cmdline), "wait\x00"+container)
}

// logger writes the kind library's messages (up to verbosity 1) to a file.
type logger struct{ w io.Writer }

func (l logger) Warn(message string)                      { fmt.Fprintln(l.w, "WARNING:", message) }
func (l logger) Warnf(format string, args ...any)         { l.Warn(fmt.Sprintf(format, args...)) }
func (l logger) Error(message string)                     { fmt.Fprintln(l.w, "ERROR:", message) }
func (l logger) Errorf(format string, args ...any)        { l.Error(fmt.Sprintf(format, args...)) }
func (l logger) V(level kindlog.Level) kindlog.InfoLogger { return infoLogger{l: l, on: level <= 1} }

type infoLogger struct {
	l  logger
	on bool
}

func (i infoLogger) Info(message string) {
	if i.on {
		fmt.Fprintln(i.l.w, message)
	}
}
func (i infoLogger) Infof(format string, args ...any) { i.Info(fmt.Sprintf(format, args...)) }
func (i infoLogger) Enabled() bool                    { return i.on }
