package groupsuffix

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		suffix  string
		wantErr string
	}{
		{suffix: "pinniped.dev"},
		{suffix: "tuna.io"},
		{suffix: "a.b.c.example.com"},
		{suffix: "", wantErr: "RFC 1123 subdomain"},
		{suffix: "tuna", wantErr: "must contain at least one '.'"},
		{suffix: "Tuna.io", wantErr: "RFC 1123 subdomain"},
		{suffix: ".tuna.io", wantErr: "RFC 1123 subdomain"},
		{suffix: "tuna.io.", wantErr: "RFC 1123 subdomain"},
		{suffix: "tuna_fish.io", wantErr: "RFC 1123 subdomain"},
		{suffix: strings.Repeat("a", 251) + ".io", wantErr: "no more than 253"},
	}
	for _, tt := range tests {
		err := Validate(tt.suffix)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("Validate(%q) = %v, want nil", tt.suffix, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("Validate(%q) = %v, want error containing %q", tt.suffix, err, tt.wantErr)
		}
	}
}

func TestReplaceUnreplace(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		group    string
		suffix   string
		want     string
		wantOK   bool
		reversed string // what Unreplace(want) gives back
	}{
		{name: "login", group: "login.concierge.pinniped.dev", suffix: "tuna.io", want: "login.concierge.tuna.io", wantOK: true},
		{name: "authentication", group: "authentication.concierge.pinniped.dev", suffix: "tuna.io", want: "authentication.concierge.tuna.io", wantOK: true},
		{name: "config concierge", group: "config.concierge.pinniped.dev", suffix: "tuna.io", want: "config.concierge.tuna.io", wantOK: true},
		{name: "identity", group: "identity.concierge.pinniped.dev", suffix: "tuna.io", want: "identity.concierge.tuna.io", wantOK: true},
		{name: "config supervisor", group: "config.supervisor.pinniped.dev", suffix: "tuna.io", want: "config.supervisor.tuna.io", wantOK: true},
		{name: "idp", group: "idp.supervisor.pinniped.dev", suffix: "tuna.io", want: "idp.supervisor.tuna.io", wantOK: true},
		{name: "clientsecret", group: "clientsecret.supervisor.pinniped.dev", suffix: "tuna.io", want: "clientsecret.supervisor.tuna.io", wantOK: true},
		{name: "default suffix", group: "login.concierge.pinniped.dev", suffix: "pinniped.dev", want: "login.concierge.pinniped.dev", wantOK: true},
		{name: "suffix that ends like the default", group: "idp.supervisor.pinniped.dev", suffix: "other.pinniped.dev", want: "idp.supervisor.other.pinniped.dev", wantOK: true},
		{name: "core group", group: "", suffix: "tuna.io", want: ""},
		{name: "apps", group: "apps", suffix: "tuna.io", want: "apps"},
		{name: "unknown pinniped group", group: "discovery.supervisor.pinniped.dev", suffix: "tuna.io", want: "discovery.supervisor.pinniped.dev"},
		{name: "bare suffix", group: "pinniped.dev", suffix: "tuna.io", want: "pinniped.dev"},
		{name: "extra leading label", group: "x.login.concierge.pinniped.dev", suffix: "tuna.io", want: "x.login.concierge.pinniped.dev"},
		{name: "substring", group: "login.concierge.pinniped.dev.evil.com", suffix: "tuna.io", want: "login.concierge.pinniped.dev.evil.com"},
		{name: "already replaced", group: "login.concierge.tuna.io", suffix: "tuna.io", want: "login.concierge.tuna.io"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Replace(tt.group, tt.suffix)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("Replace(%q, %q) = %q, %v; want %q, %v", tt.group, tt.suffix, got, ok, tt.want, tt.wantOK)
			}
			if !tt.wantOK {
				return
			}
			back, ok := Unreplace(got, tt.suffix)
			if back != tt.group || !ok {
				t.Fatalf("Unreplace(%q, %q) = %q, %v; want %q, true", got, tt.suffix, back, ok, tt.group)
			}
		})
	}
	if got, ok := Unreplace("login.concierge.pinniped.dev", "tuna.io"); ok || got != "login.concierge.pinniped.dev" {
		t.Errorf("Unreplace of a default group under another suffix = %q, %v; want unchanged, false", got, ok)
	}
}

func TestGroups(t *testing.T) {
	t.Parallel()
	got := Groups("tuna.io")
	if len(got) != 7 || got[0] != "authentication.concierge.tuna.io" || got[6] != "clientsecret.supervisor.tuna.io" {
		t.Fatalf("Groups(tuna.io) = %v", got)
	}
}
