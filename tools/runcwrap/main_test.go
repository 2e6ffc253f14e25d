package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want command
	}{
		{[]string{"--root", "/run/docker/runtime-runc/moby", "--log", "/x/log.json", "--log-format", "json", "--systemd-cgroup",
			"create", "--bundle", "/b", "--pid-file", "/b/init.pid", "id"}, command{sub: "create", bundle: "/b"}},
		{[]string{"--debug", "run", "-b=/other", "exec"}, command{sub: "run", bundle: "/other"}},
		{[]string{"--root", "create", "exec", "--process", "/tmp/p.json", "--detach", "id"}, command{sub: "exec", process: "/tmp/p.json"}},
		{[]string{"exec", "-p", "/tmp/q.json", "id"}, command{sub: "exec", process: "/tmp/q.json"}},
		{[]string{"--version"}, command{}},
		{[]string{"delete", "--force", "id"}, command{sub: "delete"}},
	}
	for _, tt := range tests {
		if got := parseArgs(tt.args); got != tt.want {
			t.Errorf("parseArgs(%q) = %+v, want %+v", tt.args, got, tt.want)
		}
	}
}

func TestBoundingSetAndMissing(t *testing.T) {
	t.Parallel()
	status := []byte("Name:\tcat\nCapEff:\t000001fffeffffff\nCapBnd:\t000001fffeffffff\nCapAmb:\t0000000000000000\n")
	bnd, err := boundingSet(status)
	if err != nil {
		t.Fatal(err)
	}
	if got := missingFrom(bnd, 40); !reflect.DeepEqual(got, map[string]bool{"CAP_SYS_RESOURCE": true}) {
		t.Errorf("missing = %v, want CAP_SYS_RESOURCE only", got)
	}
	// Capabilities past the kernel's last one are not missing, they do not exist.
	if got := missingFrom(0xffffffffff, 40); !reflect.DeepEqual(got, map[string]bool{"CAP_CHECKPOINT_RESTORE": true}) {
		t.Errorf("missing = %v, want CAP_CHECKPOINT_RESTORE only", got)
	}
	if got := missingFrom(0x7fffffffff, 38); len(got) != 0 {
		t.Errorf("missing on an older kernel = %v, want none", got)
	}
	if _, err := boundingSet([]byte("Name:\tcat\n")); err == nil {
		t.Error("a status without CapBnd parsed")
	}
}

func TestAdjustCreateRewritesTheSpec(t *testing.T) {
	t.Parallel()
	bundle := t.TempDir()
	spec := `{"ociVersion":"1.0.2","process":{"oomScoreAdj":-999,"capabilities":{` +
		`"bounding":["CAP_CHOWN","CAP_SYS_RESOURCE","CAP_SYS_ADMIN"],"effective":["CAP_SYS_RESOURCE"],"ambient":[]}},` +
		`"linux":{"resources":{"memory":{"limit":9223372036854775807}}}}`
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), []byte(spec), 0o640); err != nil {
		t.Fatal(err)
	}
	missing := map[string]bool{"CAP_SYS_RESOURCE": true}
	if err := adjust([]string{"--root", "/r", "create", "--bundle", bundle, "id"}, missing); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		OCIVersion string `json:"ociVersion"`
		Process    struct {
			OOMScoreAdj  *int                `json:"oomScoreAdj"`
			Capabilities map[string][]string `json:"capabilities"`
		} `json:"process"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Process.Capabilities["bounding"], []string{"CAP_CHOWN", "CAP_SYS_ADMIN"}) ||
		len(got.Process.Capabilities["effective"]) != 0 {
		t.Errorf("capabilities = %v, want CAP_SYS_RESOURCE dropped from every set", got.Process.Capabilities)
	}
	if got.Process.OOMScoreAdj == nil || *got.Process.OOMScoreAdj < 0 {
		t.Errorf("oomScoreAdj = %v, want it raised to this process's value (>= 0)", got.Process.OOMScoreAdj)
	}
	if got.OCIVersion != "1.0.2" || !strings.Contains(string(data), "9223372036854775807") {
		t.Errorf("the rest of the spec changed:\n%s", data)
	}
	if info, err := os.Stat(filepath.Join(bundle, "config.json")); err != nil || info.Mode().Perm() != 0o640 {
		t.Errorf("mode after rewrite: %v, %v", info.Mode(), err)
	}
}

func TestAdjustExecRewritesTheProcessFile(t *testing.T) {
	t.Parallel()
	process := filepath.Join(t.TempDir(), "process.json")
	if err := os.WriteFile(process, []byte(`{"args":["sh"],"capabilities":{"permitted":["CAP_KILL","CAP_SYS_RESOURCE"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := adjust([]string{"exec", "--process", process, "--detach", "id"}, map[string]bool{"CAP_SYS_RESOURCE": true}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(process)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != `{"args":["sh"],"capabilities":{"permitted":["CAP_KILL"]}}` {
		t.Errorf("process file = %s", data)
	}
}

func TestAdjustLeavesOtherCommandsAndKeepsOOMWhenAllowed(t *testing.T) {
	t.Parallel()
	bundle := t.TempDir()
	spec := `{"process":{"oomScoreAdj":-999,"capabilities":{"bounding":["CAP_MAC_ADMIN","CAP_SYS_RESOURCE"]}}}`
	path := filepath.Join(bundle, "config.json")
	if err := os.WriteFile(path, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := adjust([]string{"delete", "--force", "id"}, map[string]bool{"CAP_MAC_ADMIN": true}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != spec {
		t.Errorf("delete changed the spec: %s", data)
	}
	if err := adjust([]string{"create", "-b", bundle, "id"}, map[string]bool{"CAP_MAC_ADMIN": true}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != `{"process":{"capabilities":{"bounding":["CAP_SYS_RESOURCE"]},"oomScoreAdj":-999}}` {
		t.Errorf("spec = %s, want CAP_MAC_ADMIN dropped and oomScoreAdj kept (CAP_SYS_RESOURCE is there)", data)
	}
}

func TestAdjustReportsABrokenSpec(t *testing.T) {
	t.Parallel()
	bundle := t.TempDir()
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := adjust([]string{"run", "--bundle", bundle, "id"}, map[string]bool{"CAP_SYS_RESOURCE": true})
	if err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("adjust of a broken spec: %v, want an error naming the file", err)
	}
}
