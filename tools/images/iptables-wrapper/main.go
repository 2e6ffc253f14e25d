// Command iptables-wrapper stands in for iptables, iptables-save, iptables-restore and their
// ip6tables twins in the kube-proxy image. The image carries both iptables backends (nft and
// legacy), and kube-proxy must use the one the node already uses (kubelet, the CNI plugin),
// otherwise its rules and theirs land in different kernel subsystems and packets meet only half of
// them. On first use the wrapper detects that backend, points the command links at it so later
// calls go straight to it, and runs the requested command.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// sbin is where the image keeps the xtables binaries and the links to them.
const sbin = "/usr/sbin"

// commands are the names kube-proxy runs; each is a link to this wrapper until a backend is chosen.
var commands = []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"}

// hintChains are created in the mangle table by the kubelet (and by kube-proxy on earlier runs)
// with the node's backend, for exactly this detection.
var hintChains = []string{":KUBE-IPTABLES-HINT ", ":KUBE-KUBELET-CANARY "}

func main() {
	backend := detect()
	// A read-only root filesystem keeps the links on the wrapper: every call then detects again.
	_ = relink(backend)
	bin := multiBinary(backend)
	// The multi-call binary dispatches on the name it is run as.
	err := syscall.Exec(bin, append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...), os.Environ())
	fmt.Fprintf(os.Stderr, "iptables-wrapper: running %s: %v\n", bin, err)
	os.Exit(1)
}

func multiBinary(backend string) string {
	return filepath.Join(sbin, "xtables-"+backend+"-multi")
}

// detect prefers the backend holding the kubelet's hint chains, then the one holding more rules,
// then nft, the default of iptables since 1.8.
func detect() string {
	for _, backend := range []string{"nft", "legacy"} {
		for _, save := range []string{"iptables-save", "ip6tables-save"} {
			if hasHint(dump(backend, save, "-t", "mangle")) {
				return backend
			}
		}
	}
	if countRules("legacy") > countRules("nft") {
		return "legacy"
	}
	return "nft"
}

// dump runs a save command with one backend; a backend the kernel lacks reads as empty.
func dump(backend, save string, args ...string) string {
	cmd := exec.Command(multiBinary(backend), append([]string{save}, args...)...)
	out, _ := cmd.Output()
	return string(out)
}

func hasHint(dump string) bool {
	for _, line := range strings.Split(dump, "\n") {
		for _, chain := range hintChains {
			if strings.HasPrefix(line, chain) {
				return true
			}
		}
	}
	return false
}

func countRules(backend string) int {
	n := 0
	for _, save := range []string{"iptables-save", "ip6tables-save"} {
		for _, line := range strings.Split(dump(backend, save), "\n") {
			if strings.HasPrefix(line, "-") {
				n++
			}
		}
	}
	return n
}

// relink points every command link at the chosen backend, each replaced atomically.
func relink(backend string) error {
	for _, c := range commands {
		link := filepath.Join(sbin, c)
		tmp := link + ".relink"
		_ = os.Remove(tmp)
		if err := os.Symlink(filepath.Base(multiBinary(backend)), tmp); err != nil {
			return err
		}
		if err := os.Rename(tmp, link); err != nil {
			os.Remove(tmp)
			return err
		}
	}
	return nil
}
