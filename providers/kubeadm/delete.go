package kubeadm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"sealion.dev/providers/internal/clusterlogs"
	"sealion.dev/providers/internal/clusterready"
	"sealion.dev/providers/internal/containerd"
	"sealion.dev/providers/internal/hostlock"
	"sealion.dev/providers/internal/hoststate"
)

const (
	kubeletStopGrace = 10 * time.Second
	podLogsDir       = "/var/log/pods"
)

// Delete is part of the providers.Provider interface. A cluster created by another process
// that died is deleted from what Create saved in its directory.
func (p *provider) Delete(ctx context.Context, name string) error {
	l, err := p.layout(name)
	if err != nil {
		return err
	}
	p.mu.Lock()
	c, ours := p.clusters[name]
	delete(p.clusters, name)
	p.mu.Unlock()
	if !ours {
		if _, err := os.Stat(l.snapshotFile()); os.IsNotExist(err) {
			return nil // never created, or already deleted
		}
		state, err := loadState(l)
		if err != nil {
			return fmt.Errorf("deleting kubeadm cluster %q: %w", name, err)
		}
		c = &cluster{layout: l, state: state}
	}
	began := time.Now()
	err = p.teardown(ctx, c)
	p.progress(name, "delete", time.Since(began), err)
	if err != nil {
		return fmt.Errorf("deleting kubeadm cluster %q: %w", name, err)
	}
	return nil
}

// teardown cleans up after the cluster (see cleanUp) and releases the host lock.
func (p *provider) teardown(ctx context.Context, c *cluster) error {
	if c.lock == nil {
		lock, err := hostlock.Acquire(ctx, p.opts.LockPath)
		if err != nil {
			return err
		}
		c.lock = lock
	}
	defer func() { _ = c.lock.Release() }()
	return cleanUp(ctx, c)
}

// deleteLeftBehind deletes the clusters of the work directory that a process created and never
// deleted. Its caller holds the host lock, which a running cluster keeps from Create to Delete,
// so each of them belongs to a process that died: it cannot run again (its containerd and
// kubelet died with that process) but it still holds the host, and a killed run must not fail
// the next one.
func (p *provider) deleteLeftBehind(ctx context.Context) error {
	entries, err := os.ReadDir(p.opts.WorkDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		l := layout{dir: filepath.Join(p.opts.WorkDir, e.Name())}
		if _, err := os.Stat(l.snapshotFile()); err != nil {
			continue // deleted, or never got as far as changing the host
		}
		state, err := loadState(l)
		if err != nil {
			errs = append(errs, fmt.Errorf("kubeadm cluster left behind in %s: %w", l.dir, err))
			continue
		}
		began := time.Now()
		err = cleanUp(ctx, &cluster{layout: l, state: state})
		p.progress(state.Name, "delete (left by a process that died)", time.Since(began), err)
		if err != nil {
			errs = append(errs, fmt.Errorf("deleting kubeadm cluster %q, left by a process that died: %w", state.Name, err))
		}
	}
	return errors.Join(errs...)
}

// cleanUp stops the cluster and puts the host back as recorded, then removes the cluster's
// directory except its logs. The caller holds the host lock.
func cleanUp(ctx context.Context, c *cluster) error {
	before, err := hoststate.Load(c.snapshotFile())
	if err != nil {
		return err
	}
	logFile, err := os.OpenFile(filepath.Join(c.logsDir(), "teardown.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("creating teardown log: %w", err)
	}
	defer logFile.Close()
	run := runner(logFile, c.state.BinDir)

	var errs []error
	// The kubelet would restart the pods kubeadm reset removes.
	if c.kubelet != nil {
		errs = append(errs, c.kubelet.Stop(kubeletStopGrace))
	}
	if c.containerd == nil {
		// Left by a process that died: its daemons died with it (PDEATHSIG), the pods did not.
		// A containerd on the saved configuration lets kubeadm reset remove them properly.
		if _, err := os.Stat(filepath.Join(c.containerdDir(), "config.toml")); err == nil {
			d, err := containerd.Restart(ctx, c.containerdDir(), filepath.Join(c.logsDir(), "containerd.log"), run)
			if err != nil {
				fmt.Fprintf(logFile, "restarting containerd for the clean-up: %v\n", err)
			}
			c.containerd = d
		}
	}
	if c.containerd != nil {
		// Stops every pod through the CRI (so the CNI plugins release their addresses and
		// rules), unmounts the kubelet's directories and removes kubeadm's files.
		if err := run.Run(ctx, "kubeadm", kubeadmResetArgs(c.socket())...); err != nil {
			fmt.Fprintf(logFile, "kubeadm reset failed, continuing: %v\n", err)
		}
		errs = append(errs, containerd.RemoveAllContainers(ctx, run, c.socket()))
		errs = append(errs, c.containerd.Stop())
	}
	errs = append(errs, hoststate.Restore(ctx, run, before, hostCluster(c.layout)))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return removeAllBut(c.dir, c.logsDir())
}

func hostCluster(l layout) hoststate.Cluster {
	return hoststate.Cluster{Marker: l.containerdDir() + "/", Links: []string{bridgeDevice, serviceSinkDevice}, Files: []string{l.cniFile()}}
}

func kubeadmResetArgs(socket string) []string {
	// Removing the etcd member is pointless on a single node whose data goes anyway.
	return []string{"reset", "--force", "--cri-socket", "unix://" + socket, "--skip-phases=remove-etcd-member", "--v=1"}
}

// removeAllBut removes dir's entries except keep.
func removeAllBut(dir, keep string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if p := filepath.Join(dir, e.Name()); p != keep {
			errs = append(errs, os.RemoveAll(p))
		}
	}
	return errors.Join(errs...)
}

// CollectLogs is part of the providers.Provider interface.
func (p *provider) CollectLogs(ctx context.Context, name, dir string) error {
	l, err := p.layout(name)
	if err != nil {
		return err
	}
	if _, err := os.Stat(l.dir); err != nil {
		return fmt.Errorf("collecting logs of kubeadm cluster %q: %w", name, err)
	}
	return p.collectLogs(ctx, l, dir)
}

// collectLogs copies the daemons' and commands' logs and the pod logs from /var/log/pods into
// dir, then what the API server reports (when it answers) into dir/cluster.
func (p *provider) collectLogs(ctx context.Context, l layout, dir string) error {
	var errs []error
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if filepath.Clean(dir) != filepath.Clean(l.logsDir()) {
		errs = append(errs, copyTree(l.logsDir(), dir))
	}
	if _, err := os.Stat(podLogsDir); err == nil {
		errs = append(errs, copyTree(podLogsDir, filepath.Join(dir, "pods")))
	}
	if _, err := os.Stat(l.kubeconfig()); err == nil {
		client, err := clusterready.Client(l.kubeconfig())
		if err == nil {
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			err = clusterlogs.Dump(ctx, client, filepath.Join(dir, "cluster"))
			cancel()
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// copyTree copies the regular files below src into dst, following no symlinks.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		return copyFile(path, target)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return out.Close()
}
