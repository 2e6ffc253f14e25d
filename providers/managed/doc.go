// Package managed simulates Kubernetes clusters whose control plane is out of reach on this
// machine: managed clouds (the GKE, EKS and AKS profiles) and clusters bootstrapped without
// kubeadm (the talos-like profile), for tests that must hold against them.
//
// The control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) runs as plain
// processes on the host, outside the cluster: there are no static pods, no Node labelled as a
// control plane, no kube-controller-manager pod and no cluster-info ConfigMap, and the cluster
// signing key is a file no pod can mount. The API server serves on the host's non-loopback IPv4
// address, so that pods reach it through the kubernetes Service, with the aggregation layer
// configured for aggregated API servers such as the Concierge. One worker node runs containerd,
// a CNI bridge, a kubelet holding a node certificate the provider signed (system:node:<name> in
// system:nodes), and kube-proxy on the host; CoreDNS is a Deployment behind the kube-dns
// Service. The LoadBalancer controller of package loadbalancer plays the cloud load balancer:
// Services get an IP (gke, aks) or a hostname (eks). The talos-like profile has no cloud load
// balancer; its node is labelled a control plane, and the Ingress controller of package ingress
// routes TLS by server name to ClusterIP Services, as ingress-nginx with ssl-passthrough does.
//
// # Process lifetime
//
// Create must return while the cluster keeps running, and Delete may come from another process
// (`make demo` then `make demo-down`). So Create starts a supervisor: the running program
// itself, executed again with the environment variable SEALION_MANAGED_CLUSTER_SUPERVISOR
// naming the cluster's state folder, detached in its own session. The supervisor brings the
// cluster up step by step, reporting each step to Create over a pipe, then keeps the daemons
// running (restarting any that exit) together with the load balancer controller. Its daemons die
// with it (PDEATHSIG).
//
// Re-executing the program spares a separate supervisor binary to build and find, but the
// program must know to become the supervisor: every program that links this package calls Main
// first thing in main, and every test package that does calls it first thing in TestMain
// (programs that link it through sealion.dev/providers/all call all.Main, which calls Main). Main
// sees the variable, runs the supervisor instead of the program and exits; otherwise it returns.
// Create fails at once, naming Main, in a program that never called it: a copy of such a
// program ignores the variable and does the program's own work again.
//
// Each cluster keeps its state in /var/lib/sealion/managed/<name>: certificates, the admin
// kubeconfig, configuration, etcd data, containerd, the kubelet's root, logs, the supervisor's
// pid file and a snapshot of the host taken before anything started. Delete sends the
// supervisor SIGTERM (it stops the load balancer controller, the node's daemons, every
// container, containerd and the control plane, in that order), then restores the host from the
// snapshot (leftover processes, mounts, network namespaces, iptables chains, the bridge,
// cgroups, files the kubelet writes outside its root, kernel settings, the hosts-file block of
// the eks profile) and removes the state folder.
//
// Only one cluster with a kubelet can run on a machine at a time (the ports are fixed); callers
// serialise them, as this package's integration test does by holding /tmp/sealion-host.lock.
package managed
