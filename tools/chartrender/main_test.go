package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"sealion.dev/tools/deploycheck"
)

func TestRender(t *testing.T) {
	chart := filepath.Join("..", "..", "servers", "supervisor", "deploy", "chart")
	var out bytes.Buffer
	if err := render(&out, chart, "tuna", `{"networkPolicy":{"enabled":true}}`); err != nil {
		t.Fatal(err)
	}
	objects, err := deploycheck.Decode(out.Bytes())
	if err != nil {
		t.Fatalf("the output does not decode: %v", err)
	}
	var deployment, policy bool
	for _, o := range objects {
		switch o.GetKind() {
		case "Deployment":
			deployment = o.GetNamespace() == "tuna"
		case "NetworkPolicy":
			policy = true
		}
	}
	if !deployment || !policy {
		t.Errorf("rendered %d objects without the Deployment in the release's namespace or the NetworkPolicy asked for:\n%s", len(objects), out.String())
	}

	for _, tc := range []struct{ chart, values, want string }{
		{"", "{}", "no chart"},
		{chart, "[1]", "not a JSON object"},
		{chart, `{"noSuchValue":1}`, "noSuchValue"},
		{filepath.Join(t.TempDir(), "missing"), "{}", "loading chart"},
	} {
		if err := render(&out, tc.chart, "ns", tc.values); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("render(%q, %s) = %v, want an error with %q", tc.chart, tc.values, err, tc.want)
		}
	}
}
