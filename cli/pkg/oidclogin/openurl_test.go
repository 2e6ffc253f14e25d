package oidclogin

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOpenURLHonoursBrowserVariable(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the browser here is a shell script")
	}
	dir := t.TempDir()
	got := filepath.Join(dir, "args")
	script := filepath.Join(dir, "browser")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$@\" > "+got+".tmp && mv "+got+".tmp "+got+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	const u = "https://issuer.example/authorize?state=s&code_challenge=c"
	tests := []struct {
		name, browser, want string
	}{
		{name: "URL appended", browser: script, want: u},
		{name: "URL substituted", browser: script + " --new-window %s --private", want: "--new-window " + u + " --private"},
		{name: "first command that starts", browser: filepath.Join(dir, "missing") + string(os.PathListSeparator) + script, want: u},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_ = os.Remove(got)
			if err := openURL(u, tt.browser); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				data, err := os.ReadFile(got)
				if err == nil {
					if s := strings.TrimSpace(string(data)); s != tt.want {
						t.Errorf("browser ran with %q, want %q", s, tt.want)
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatal("the browser did not run")
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	if err := openURL(u, filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "could not open a browser (set $BROWSER)") {
		t.Errorf("err = %v, want a clear error", err)
	}
}

func TestWarningText(t *testing.T) {
	for in, want := range map[string]string{
		`299 - "short session"`:    "short session",
		`299 - "with \"quotes\""`:  `with "quotes"`,
		"free text from elsewhere": "free text from elsewhere",
	} {
		if got := warningText(in); got != want {
			t.Errorf("warningText(%q) = %q, want %q", in, got, want)
		}
	}
}

// Each system's own opener receives the URL whole, as one argument.
func TestSystemOpener(t *testing.T) {
	const u = "https://issuer.example/authorize?state=s&code_challenge=c"
	for goos, want := range map[string][]string{
		"linux":   {"xdg-open", u},
		"freebsd": {"xdg-open", u},
		"darwin":  {"open", u},
		"windows": {"rundll32", "url.dll,FileProtocolHandler", u},
	} {
		if got := systemOpener(goos, u); !slices.Equal(got, want) {
			t.Errorf("systemOpener(%s) = %q, want %q", goos, got, want)
		}
	}
}
