package kubeadm

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"sealion.dev/providers/internal/daemon"
)

// Where kubeadm leaves the kubelet's configuration for the init system's kubelet unit.
const (
	kubeletFlagsEnv          = "/var/lib/kubelet/kubeadm-flags.env"
	kubeletConfigFile        = "/var/lib/kubelet/config.yaml"
	kubeletKubeconfig        = "/etc/kubernetes/kubelet.conf"
	kubeletBootstrapKubeconf = "/etc/kubernetes/bootstrap-kubelet.conf"
	adminKubeconfig          = "/etc/kubernetes/admin.conf"
)

// kubeletCommand plays the part of kubeadm's systemd drop-in (10-kubeadm.conf): the kubelet
// waits until kubeadm wrote its configuration, then runs with the drop-in's flags followed by
// kubeadm's own. It is asked again at every restart, like the unit's ExecStart.
func kubeletCommand(kubelet string) func() ([]string, error) {
	return func() ([]string, error) {
		if _, err := os.Stat(kubeletConfigFile); err != nil {
			return nil, daemon.ErrNotReady
		}
		data, err := os.ReadFile(kubeletFlagsEnv)
		if os.IsNotExist(err) {
			return nil, daemon.ErrNotReady
		}
		if err != nil {
			return nil, fmt.Errorf("reading kubelet flags: %w", err)
		}
		flags, err := parseFlagsEnv(string(data))
		if err != nil {
			return nil, err
		}
		argv := []string{kubelet,
			"--bootstrap-kubeconfig=" + kubeletBootstrapKubeconf,
			"--kubeconfig=" + kubeletKubeconfig,
			"--config=" + kubeletConfigFile,
		}
		return append(argv, flags...), nil
	}
}

// parseFlagsEnv reads KUBELET_KUBEADM_ARGS from kubeadm-flags.env, a systemd environment file
// with one quoted assignment whose value systemd splits on spaces.
func parseFlagsEnv(content string) ([]string, error) {
	sc := bufio.NewScanner(strings.NewReader(content))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		value, ok := strings.CutPrefix(line, "KUBELET_KUBEADM_ARGS=")
		if !ok {
			continue
		}
		if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
			value = value[1 : len(value)-1]
		}
		return strings.Fields(value), nil
	}
	return nil, fmt.Errorf("%s has no KUBELET_KUBEADM_ARGS line: %q", kubeletFlagsEnv, content)
}
