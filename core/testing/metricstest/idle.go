package metricstest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
)

// WritesWhileIdle watches the kube-apiserver's count of the writes it serves for a window
// without any, and returns nil at the first, or an error that lists the writes of the last
// window when none came within a minute. It is for a server with nothing to do: its clients have no client-side rate
// limit (serverboot.KubeRESTConfig), so a controller that rewrote its objects in a loop would
// take what the API server's priority and fairness allows, and nothing else would show it.
// Writes that follow from a test's set-up (a status catching up) may come for a few seconds; a
// loop never stops. The count is by verb, resource and subresource, and leaves out leases (a
// leader renews its own every few seconds, as it should) and reviews, which store nothing (a
// server asks them of the requests it serves, such as the aggregator's discovery of its APIs).
// It sees every writer where the test's control plane runs no controller manager.
func WritesWhileIdle(t testing.TB, kube kubernetes.Interface) error {
	t.Helper()
	const window, patience = 15 * time.Second, time.Minute
	before := kubeWrites(t, kube)
	var seen map[string]float64
	for deadline := time.Now().Add(patience); time.Now().Before(deadline); {
		time.Sleep(window)
		after := kubeWrites(t, kube)
		seen = map[string]float64{}
		for k, n := range after {
			if d := n - before[k]; d > 0 {
				seen[k] = d
			}
		}
		if len(seen) == 0 {
			return nil
		}
		before = after
	}
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(seen)) {
		lines = append(lines, fmt.Sprintf("%s: %.0f", k, seen[k]))
	}
	return fmt.Errorf("in every %s of a minute with nothing to do, the kube-apiserver served writes; in the last:\n%s", window, strings.Join(lines, "\n"))
}

// kubeWrites reads the kube-apiserver's count of the writes WritesWhileIdle watches.
func kubeWrites(t testing.TB, kube kubernetes.Interface) map[string]float64 {
	t.Helper()
	writes := []string{"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"}
	return Sum(KubeAPIServer(t, kube), "apiserver_request_total", func(l map[string]string) (string, bool) {
		if !slices.Contains(writes, l["verb"]) || l["resource"] == "leases" || strings.HasSuffix(l["resource"], "reviews") {
			return "", false
		}
		return strings.TrimSuffix(fmt.Sprintf("%s %s.%s/%s", l["verb"], l["resource"], l["group"], l["subresource"]), "/"), true
	})
}
