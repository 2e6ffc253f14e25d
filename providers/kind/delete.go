package kind

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sealion.dev/providers/internal/command"
)

// Delete is part of the providers.Provider interface. It works from any process, from what
// Create saved in the cluster's directory and what Docker reports.
func (p *provider) Delete(ctx context.Context, name string) error {
	l, err := p.layout(name)
	if err != nil {
		return err
	}
	state, err := loadState(l.stateFile())
	saved := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("deleting kind cluster %q: %w", name, err)
	}
	if !saved {
		// Without the state Create saves, only a cluster Docker knows can be there.
		if p.docker.ping(ctx) != nil {
			return nil
		}
		names, err := kindProvider(io.Discard).List()
		if err != nil {
			return fmt.Errorf("deleting kind cluster %q: listing kind clusters: %w", name, err)
		}
		if !slices.Contains(names, name) {
			return nil // never created, or already deleted
		}
		state = clusterState{Name: name}
	}
	began := time.Now()
	err = p.teardown(ctx, l, state)
	p.progress(name, "delete", time.Since(began), err)
	if err != nil {
		return fmt.Errorf("deleting kind cluster %q: %w", name, err)
	}
	return nil
}

// teardown removes the host route and hosts entry, the nodes, the Docker networks nobody else
// uses and the cluster's directory except its logs, then waits until the host lock is free.
func (p *provider) teardown(ctx context.Context, l layout, state clusterState) error {
	if err := os.MkdirAll(l.logsDir(), 0o755); err != nil {
		return err
	}
	logFile, err := os.OpenFile(filepath.Join(l.logsDir(), "delete.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("creating delete log: %w", err)
	}
	defer logFile.Close()
	run := command.Runner{Log: logFile}
	d := docker{run: run}

	node := nodeContainer(state.Name)
	networks := state.Networks
	if attached, err := d.networksOf(ctx, node); err == nil {
		networks = append(networks, attached...)
	}
	var errs []error
	if len(state.Route) > 0 {
		out, err := run.Output(ctx, "ip", append([]string{"route", "del"}, state.Route...)...)
		if err != nil && !strings.Contains(string(out), "No such process") {
			errs = append(errs, fmt.Errorf("removing the route to the Service network: %w", err))
		}
	}
	if err := kindProvider(logFile).Delete(state.Name, l.kubeconfig()); err != nil {
		errs = append(errs, withCommandOutput(err))
	}
	slices.Sort(networks)
	for _, n := range slices.Compact(networks) {
		if err := d.removeNetworkIfUnused(ctx, n); err != nil {
			errs = append(errs, fmt.Errorf("removing Docker network %s: %w", n, err))
		}
	}
	errs = append(errs, waitLockHolderGone(ctx, state.LockHolder, node))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return removeAllBut(l.dir, l.logsDir())
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
