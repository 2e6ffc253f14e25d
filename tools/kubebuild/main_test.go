package main

import "testing"

func TestUnservedModule(t *testing.T) {
	for _, c := range []struct{ stderr, want string }{
		{"go: k8s.io/kubernetes/cmd/kubelet imports\n\tk8s.io/csi-translation-lib: k8s.io/csi-translation-lib@v0.32.13: reading https://proxy.golang.org/k8s.io/csi-translation-lib/@v/v0.32.13.zip: 403 Forbidden\n\tserver response: This module version is not available.\n",
			"k8s.io/csi-translation-lib@v0.32.13"},
		{"\tk8s.io/kube-aggregator/pkg/apiserver: k8s.io/kube-aggregator@v0.31.14: verifying module: k8s.io/kube-aggregator@v0.31.14: reading https://proxy.golang.org/sumdb/sum.golang.org/lookup/k8s.io/kube-aggregator@v0.31.14: 404 Not Found\n",
			"k8s.io/kube-aggregator@v0.31.14"},
		{"go: downloading k8s.io/api v0.33.13\ngo: k8s.io/kubernetes@v1.33.13: dial tcp: lookup proxy.golang.org: no such host\n", ""},
	} {
		if got := unservedModule(c.stderr); got != c.want {
			t.Errorf("unservedModule(%q) = %q, want %q", c.stderr, got, c.want)
		}
	}
}
