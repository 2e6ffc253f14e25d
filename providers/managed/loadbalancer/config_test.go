package loadbalancer

import (
	"net/netip"
	"strings"
	"testing"
)

func TestConfigWithDefaults(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		want    Config
		wantErr string
	}{
		{name: "IP mode defaults", cfg: Config{Mode: ModeIP},
			want: Config{Mode: ModeIP, Range: netip.MustParsePrefix(DefaultRange), DialTimeout: defaultDialTimeout}},
		{name: "hostname mode defaults", cfg: Config{Mode: ModeHostname},
			want: Config{Mode: ModeHostname, Range: netip.MustParsePrefix(DefaultRange), DialTimeout: defaultDialTimeout,
				HostnamePattern: DefaultHostnamePattern, HostsFile: DefaultHostsFile}},
		{name: "no mode", cfg: Config{}, wantErr: `mode "" is neither`},
		{name: "host bits set", cfg: Config{Mode: ModeIP, Range: netip.MustParsePrefix("127.0.10.1/24")}, wantErr: "use 127.0.10.0/24"},
		{name: "range too small", cfg: Config{Mode: ModeIP, Range: netip.MustParsePrefix("127.0.10.0/31")}, wantErr: "no usable address"},
		{name: "pattern without namespace", cfg: Config{Mode: ModeHostname, HostnamePattern: "{name}.elb.test"}, wantErr: "must contain both"},
		{name: "pattern that is no DNS name", cfg: Config{Mode: ModeHostname, HostnamePattern: "{name}_{namespace}.test"}, wantErr: "does not give DNS names"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.cfg.withDefaults()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("withDefaults() error = %v; want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("withDefaults() = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestHostname(t *testing.T) {
	cfg := Config{HostnamePattern: "{name}-lb.{namespace}.elb.test"}
	if got := cfg.hostname("team", "web"); got != "web-lb.team.elb.test" {
		t.Fatalf("hostname() = %q", got)
	}
}
