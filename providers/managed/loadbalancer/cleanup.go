package loadbalancer

// RemoveHostnames removes the controller's block from hostsFile (DefaultHostsFile when empty),
// leaving the rest of the file alone. A stopped controller removes its block itself; this is for
// cleaning up after one that was killed.
func RemoveHostnames(path string) error {
	if path == "" {
		path = DefaultHostsFile
	}
	return hostsFile(path).Write(nil)
}
