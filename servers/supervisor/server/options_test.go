package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestNewOptionsReadsThePodsEnvironment(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "supervisor-ns")
	t.Setenv("POD_NAME", "supervisor-pod")
	o := NewOptions()
	want := Options{ConfigFile: "/etc/config/pinniped.yaml", Namespace: "supervisor-ns", PodName: "supervisor-pod", DeploymentName: "pinniped-supervisor", BindAddress: "0.0.0.0"}
	if *o != want {
		t.Errorf("NewOptions() = %+v, want %+v", *o, want)
	}
}

func TestAddFlags(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "from-env")
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--config", "c.yaml", "--kubeconfig", "k", "--bind-address", "127.0.0.1", "--pod-name", "p", "--deployment-name", "d"}); err != nil {
		t.Fatal(err)
	}
	want := Options{ConfigFile: "c.yaml", Kubeconfig: "k", Namespace: "from-env", PodName: "p", DeploymentName: "d", BindAddress: "127.0.0.1"}
	if *o != want {
		t.Errorf("after parsing: %+v, want %+v", *o, want)
	}
}

func TestValidate(t *testing.T) {
	valid := Options{Namespace: "ns", DeploymentName: "pinniped-supervisor", BindAddress: "0.0.0.0"}
	tests := []struct {
		name   string
		change func(*Options)
		want   []string
	}{
		{name: "valid", change: func(*Options) {}},
		{name: "IPv6", change: func(o *Options) { o.BindAddress = "::" }},
		{
			name:   "no namespace",
			change: func(o *Options) { o.Namespace = "" },
			want:   []string{"the Supervisor's namespace is unknown: set --namespace or POD_NAMESPACE"},
		},
		{
			name:   "host name",
			change: func(o *Options) { o.BindAddress = "localhost" },
			want:   []string{`--bind-address: "localhost" is not an IP address`},
		},
		{
			name:   "no deployment name",
			change: func(o *Options) { o.DeploymentName = "" },
			want:   []string{"--deployment-name must not be empty: it names the leader election's Lease"},
		},
		{
			name:   "every problem at once",
			change: func(o *Options) { o.Namespace, o.BindAddress, o.DeploymentName = "", "", "" },
			want:   []string{"namespace is unknown", "--deployment-name", `--bind-address: "" is not an IP address`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid
			tt.change(&o)
			err := o.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

// Config reports a configuration file it cannot use before it reaches for the cluster.
func TestConfigReportsTheFilesProblems(t *testing.T) {
	dir := t.TempDir()
	invalid := filepath.Join(dir, "invalid.yaml")
	if err := os.WriteFile(invalid, []byte("names: {defaultTLSCertificateSecret: tls}\nendpoints: {https: {network: udp}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		filepath.Join(dir, "missing.yaml"): "reading config",
		invalid:                            "endpoints.https.network: must be one of tcp, unix, disabled",
	} {
		o := Options{ConfigFile: file, Namespace: "ns", BindAddress: "0.0.0.0"}
		if _, err := o.Config(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Config() with %s = %v, want an error containing %q", filepath.Base(file), err, want)
		}
	}
}
