// Package cloudproof proves on this machine that the conformance suite runs against a cluster
// the user brings, as a cloud's: it makes a kubeadm cluster, serves an image registry on
// loopback (tools/images registry), and runs e2e/conformance with the existing provider, the
// kubeadm profile and SEALION_REGISTRY, so our images (the release's server image, the one its
// YAMLs install, and the fixtures') are pushed and pulled by digest, never loaded into the node, and no identity fixture of this machine
// is used: Dex and the Supervisor's endpoints are in the cluster, which this machine reaches only
// through the kube-apiserver (fixtures/tunnel). On a second such cluster it proves the matrix's
// installed mode: our charts installed with Helm as a user would, in namespaces and under an API
// group suffix of theirs, found and tested by `matrix --installed` with the verdicts of a normal
// run, and left unchanged.
package cloudproof
