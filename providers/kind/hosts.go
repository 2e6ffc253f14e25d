package kind

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// hostsPath is the hosts file that names each cluster's node for this machine: kind's kubeadm
// configuration makes <cluster>-control-plane:6443 the API server's address in the cluster-info
// ConfigMap, which clients such as the Concierge's users follow.
const hostsPath = "/etc/hosts"

func hostsBlockMarkers(cluster string) (begin, end string) {
	return "# BEGIN sealion kind cluster " + cluster + ": its node's address, removed when the cluster is deleted",
		"# END sealion kind cluster " + cluster
}

// setHostsEntry puts "ip <node>" in the cluster's block of the hosts file at path, replacing
// the block if there is one; an empty ip removes the block. The file is rewritten in place, not
// renamed over, because a container's /etc/hosts is a bind mount.
func setHostsEntry(path, cluster, ip string) error {
	content, err := os.ReadFile(path)
	if err != nil && !(errors.Is(err, fs.ErrNotExist) && ip == "") {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	begin, end := hostsBlockMarkers(cluster)
	var out bytes.Buffer
	inBlock := false
	for _, line := range strings.SplitAfter(string(content), "\n") {
		trimmed := strings.TrimRight(line, "\r\n")
		switch {
		case trimmed == begin:
			inBlock = true
		case inBlock && trimmed == end:
			inBlock = false
		case !inBlock:
			out.WriteString(line)
		}
	}
	if inBlock {
		return fmt.Errorf("%s has %q without its end line; remove the block by hand", path, begin)
	}
	if ip != "" {
		if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
			out.WriteByte('\n')
		}
		fmt.Fprintf(&out, "%s\n%s\t%s\n%s\n", begin, ip, nodeContainer(cluster), end)
	}
	if bytes.Equal(out.Bytes(), content) {
		return nil
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}
