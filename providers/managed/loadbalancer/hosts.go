package loadbalancer

import "sealion.dev/providers/internal/hostsblock"

// The controller's hostnames live between these two lines; nothing else in the file is touched.
const (
	hostsBegin = "# BEGIN sealion LoadBalancer hostnames: written by the sealion load balancer controller, removed when it stops"
	hostsEnd   = "# END sealion LoadBalancer hostnames"
)

// hostsFile is the controller's block in the hosts file at path.
func hostsFile(path string) hostsblock.File {
	return hostsblock.File{Path: path, Begin: hostsBegin, End: hostsEnd}
}
