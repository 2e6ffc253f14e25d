package server

import "testing"

// New constructs without starting: the cluster hears nothing from it.
func TestNewStartsNothing(t *testing.T) {
	tests := []struct {
		name, file    string
		wantInformers int
		// The signer's source, the watcher of the cluster's client CA, the impersonation proxy
		// and the two authenticator controllers.
		wantRuns int
	}{
		// The kube cert agent watches kube-system and the nodes with informers of its own.
		{name: "kube cert agent", file: minimalFile, wantInformers: 4, wantRuns: 6},
		{
			name:          "signer from files",
			file:          minimalFile + "signer: {certificateFile: ca.crt, privateKeyFile: ca.key}\n",
			wantInformers: 2, wantRuns: 6,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, fakes := testConfig(t, tt.file)
			s, err := c.Complete().New()
			if err != nil {
				t.Fatal(err)
			}
			if n := fakes.actions(); n != 0 {
				t.Errorf("New sent %d requests to the cluster, want none", n)
			}
			if len(s.informers) != tt.wantInformers || len(s.runners) != tt.wantRuns {
				t.Errorf("%d informer factories and %d runners, want %d and %d", len(s.informers), len(s.runners), tt.wantInformers, tt.wantRuns)
			}
			if s.api == nil || s.serving != c.Serving {
				t.Error("the aggregated API server or its certificate is missing")
			}
		})
	}
}
