// Package quickstart runs the commands of docs/quickstart.md, as a new user follows it, on a
// kubeadm cluster of ours: every sh block in order, in one bash, from the repository's root, with
// only the two values its first block asks the user for replaced (the release's version and a
// registry, here one on loopback that the node's containerd pulls from). So the page cannot
// drift from what works: a renamed file, flag or condition fails here.
package quickstart
