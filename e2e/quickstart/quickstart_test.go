package quickstart

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"sealion.dev/e2e/steps"
	"sealion.dev/providers/all"
)

func TestMain(m *testing.M) {
	all.Main() // first: every program linking the providers does
	flag.Parse()
	os.Exit(m.Run())
}

// page is the quickstart, from the repository's root.
const page = "docs/quickstart.md"

// The values the page asks the user for, as its first block gives them, and the test's own.
const (
	pageVersion  = "VERSION=v0.1.0-rc.2\n"
	pageRegistry = "REGISTRY=registry.example.com/team\n"
	testVersion  = "v0.0.0-quickstart"
)

// shellBlocks returns the text of every ```sh block of a Markdown page, in order.
func shellBlocks(markdown string) []string {
	var blocks []string
	var block *strings.Builder
	for _, line := range strings.SplitAfter(markdown, "\n") {
		switch {
		case block == nil && strings.TrimSpace(line) == "```sh":
			block = &strings.Builder{}
		case block != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, block.String())
			block = nil
		case block != nil:
			block.WriteString(line)
		}
	}
	return blocks
}

// script is the page's commands as one bash script, with the user's two values replaced; it
// fails when the first block does not ask for them as the test expects.
func script(markdown, registry string) (string, error) {
	blocks := shellBlocks(markdown)
	if len(blocks) < 2 || blocks[0] != pageVersion+pageRegistry {
		return "", fmt.Errorf("%s: the first sh block is not %q: update the page and this test together", page, pageVersion+pageRegistry)
	}
	blocks[0] = "VERSION=" + testVersion + "\nREGISTRY=" + registry + "\n"
	return "set -euxo pipefail\n" + strings.Join(blocks, ""), nil
}

func TestShellBlocks(t *testing.T) {
	t.Parallel()
	md := "# t\n```sh\n" + pageVersion + pageRegistry + "```\n\ntext\n```text\nnot run\n```\n```sh\nmake release\n```\n"
	got, err := script(md, "127.0.0.1:5000/q")
	want := "set -euxo pipefail\nVERSION=v0.0.0-quickstart\nREGISTRY=127.0.0.1:5000/q\nmake release\n"
	if err != nil || got != want {
		t.Errorf("script = %q, %v; want %q", got, err, want)
	}
	if _, err := script("```sh\nVERSION=v9\n```\n```sh\nls\n```\n", "r"); err == nil {
		t.Error("a page whose first block asks for other values was accepted")
	}
	// The page itself has the blocks the test expects.
	data, err := os.ReadFile(steps.RepoPath(page))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := script(string(data), "r"); err != nil {
		t.Error(err)
	}
}

func TestQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("makes a kubeadm cluster on this machine, which -short excludes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	data, err := os.ReadFile(steps.RepoPath(page))
	if err != nil {
		t.Fatal(err)
	}
	registry := steps.StartRegistry(ctx, t) + "/quickstart"
	commands, err := script(string(data), registry)
	if err != nil {
		t.Fatal(err)
	}

	p, err := all.New("kubeadm", all.Options{Progress: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := steps.TestCluster(ctx, t, p, "sealion-quickstart")
	kubeBin, err := steps.KubeBinDir()
	if err != nil {
		t.Fatal(err)
	}

	// The user's shell: kubectl on the PATH, the cluster's admin kubeconfig, the repository's root.
	cmd := exec.CommandContext(ctx, "bash", "-c", commands)
	cmd.Dir = steps.RepoPath(".")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+kubeBin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	t.Logf("the quickstart's commands and their output:\n%s", out.String())
	if err != nil {
		t.Fatalf("the quickstart stopped: %v", err)
	}
	// What the page says the user sees at the end.
	for _, want := range []string{"Username: pinny\n", "Groups: developers, system:authenticated\n", "kube-system"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q, which the page promises", want)
		}
	}
	// The servers run the release's image from the registry, pinned by digest.
	image, err := steps.Kubectl(ctx, kubeconfig, "", "get", "deployment", "-n", "pinniped-concierge", "pinniped-concierge",
		"-o", "jsonpath={.spec.template.spec.containers[0].image}")
	if err != nil || !strings.HasPrefix(image, registry+"/pinniped-server@sha256:") {
		t.Errorf("the Concierge runs %q (%v), want %s/pinniped-server@sha256:...", image, err, registry)
	}
}
