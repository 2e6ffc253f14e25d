package kind

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/kind/pkg/cluster/nodes"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	kindexec "sigs.k8s.io/kind/pkg/exec"

	"sealion.dev/providers/internal/clusterlogs"
	"sealion.dev/providers/internal/clusterready"
	"sealion.dev/providers/internal/command"
	"sealion.dev/providers/internal/containerd"
)

// clusterNodes lists the cluster's node containers; a cluster without any does not exist.
func clusterNodes(name string) ([]nodes.Node, error) {
	list, err := kindProvider(io.Discard).ListInternalNodes(name)
	if err != nil {
		return nil, fmt.Errorf("listing the nodes of kind cluster %q: %w", name, withCommandOutput(err))
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("kind cluster %q has no nodes (not created?)", name)
	}
	return list, nil
}

// LoadImageArchives is part of the providers.Provider interface. Each archive is imported into
// every node's containerd, as `kind load image-archive` does, and the images of an OCI layout are
// named by digest there too (containerd.DigestNames).
func (p *provider) LoadImageArchives(ctx context.Context, name string, archives ...string) error {
	if _, err := p.layout(name); err != nil {
		return err
	}
	list, err := clusterNodes(name)
	if err != nil {
		return err
	}
	for _, archive := range archives {
		digestNames, err := containerd.DigestNames(archive)
		if err != nil {
			return err
		}
		for _, n := range list {
			if err := loadArchive(ctx, n, archive, digestNames); err != nil {
				return fmt.Errorf("loading %s into node %s: %w", archive, n, err)
			}
		}
	}
	return nil
}

func loadArchive(ctx context.Context, n nodes.Node, archive string, digestNames []containerd.DigestName) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := nodeutils.LoadImageArchive(n, f); err != nil {
		return withCommandOutput(err)
	}
	for _, dn := range digestNames {
		if err := n.CommandContext(ctx, "ctr", dn.TagArgs()...).Run(); err != nil {
			return fmt.Errorf("naming %s by digest: %w", dn.Imported, withCommandOutput(err))
		}
	}
	return nil
}

// CollectLogs is part of the providers.Provider interface.
func (p *provider) CollectLogs(ctx context.Context, name, dir string) error {
	l, err := p.layout(name)
	if err != nil {
		return err
	}
	return p.collectLogs(ctx, l, name, dir)
}

// nodeLogs are the files collected from each node: the journal (systemd runs the kubelet and
// containerd there) and the images containerd holds.
var nodeLogs = []struct {
	file    string
	command []string
}{
	{"journal.log", []string{"journalctl", "--no-pager"}},
	{"kubelet.log", []string{"journalctl", "--no-pager", "-u", "kubelet.service"}},
	{"containerd.log", []string{"journalctl", "--no-pager", "-u", "containerd.service"}},
	{"images.txt", []string{"ctr", "--namespace", "k8s.io", "images", "list"}},
}

// collectLogs copies the provider's own logs, then for each node its logs and pod logs
// (/var/log/pods) into dir/<node>, then what the API server reports into dir/cluster.
func (p *provider) collectLogs(ctx context.Context, l layout, name, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var errs []error
	if filepath.Clean(dir) != filepath.Clean(l.logsDir()) {
		errs = append(errs, copyFiles(l.logsDir(), dir))
	}
	list, err := clusterNodes(name)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	run := command.Runner{}
	for _, n := range list {
		nodeDir := filepath.Join(dir, n.String())
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			return err
		}
		for _, nl := range nodeLogs {
			var out bytes.Buffer
			cmd := n.CommandContext(ctx, nl.command[0], nl.command[1:]...).SetStdout(&out).SetStderr(&out)
			if err := cmd.Run(); err != nil {
				errs = append(errs, fmt.Errorf("node %s: %s: %w", n, strings.Join(nl.command, " "), err))
			}
			errs = append(errs, os.WriteFile(filepath.Join(nodeDir, nl.file), out.Bytes(), 0o644))
		}
		if out, err := run.Output(ctx, "docker", "inspect", n.String()); err == nil {
			errs = append(errs, os.WriteFile(filepath.Join(nodeDir, "inspect.json"), out, 0o644))
		} else {
			errs = append(errs, err)
		}
		errs = append(errs, run.Run(ctx, "docker", "cp", n.String()+":/var/log/pods", filepath.Join(nodeDir, "pods")))
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

// copyFiles copies the regular files of src (not its subdirectories) into dst.
func copyFiles(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err == nil {
			err = os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// withCommandOutput adds the output of the command behind a kind library error, which the
// error's message leaves out.
func withCommandOutput(err error) error {
	if re := kindexec.RunErrorForError(err); re != nil && len(re.Output) > 0 {
		return fmt.Errorf("%w\noutput:\n%s", err, lastLines(re.Output, 40))
	}
	return err
}

func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
