package ingress

import "sealion.dev/providers/internal/hostsblock"

// The controller's hostnames live between these two lines, apart from the load balancer's block.
const (
	hostsBegin = "# BEGIN sealion Ingress hostnames: written by the sealion ingress controller, removed when it stops"
	hostsEnd   = "# END sealion Ingress hostnames"
)

// hostsFile is the controller's block in the hosts file at path.
func hostsFile(path string) hostsblock.File {
	return hostsblock.File{Path: path, Begin: hostsBegin, End: hostsEnd}
}

// RemoveHostnames removes the controller's block from the hosts file at path (DefaultHostsFile
// when empty), leaving the rest of the file alone. A stopped controller removes its block itself;
// this is for cleaning up after one that was killed.
func RemoveHostnames(path string) error {
	if path == "" {
		path = DefaultHostsFile
	}
	return hostsFile(path).Write(nil)
}
