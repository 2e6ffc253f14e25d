package kubeversions

import (
	"context"
	"strings"
	"testing"
)

// TestGoCheckAgainstTheProxy asks the Go module proxy this machine uses about two releases whose
// answers were known when this was written: v1.31.14 lacks staging modules, v1.33.13 is whole.
func TestGoCheckAgainstTheProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("asks the Go module proxy (integration tier)")
	}
	ctx := context.Background()
	refusal, err := goCheck(ctx, "v1.31.14")
	if err != nil || !strings.HasPrefix(refusal, "the Go module proxy does not serve k8s.io/") || !strings.Contains(refusal, "@v0.31.14: 403") {
		t.Errorf("v1.31.14: %q, %v; want a refused staging module", refusal, err)
	}
	if refusal, err := goCheck(ctx, "v1.33.13"); refusal != "" || err != nil {
		t.Errorf("v1.33.13: %q, %v; want served in full", refusal, err)
	}
}
