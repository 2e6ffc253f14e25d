package ingress

import (
	"strings"
	"testing"
	"time"
)

func TestConfigWithDefaults(t *testing.T) {
	got, err := Config{}.withDefaults()
	if err != nil || got.Address != DefaultAddress || got.HostsFile != DefaultHostsFile || got.DialTimeout != 5*time.Second {
		t.Fatalf("withDefaults() = %+v, %v; want the defaults", got, err)
	}
	if ip := got.ip().String(); ip != "127.0.11.1" {
		t.Fatalf("ip() = %s; want 127.0.11.1", ip)
	}
	for address, wantErr := range map[string]string{
		"ingress.test:443": "is not an IP:port",
		"127.0.205.1":      "is not an IP:port",
		"0.0.0.0:443":      "must name one IP",
	} {
		if _, err := (Config{Address: address}).withDefaults(); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("address %q: error %v; want one containing %q", address, err, wantErr)
		}
	}
}
