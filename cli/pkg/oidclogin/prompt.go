package oidclogin

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/term"
)

// Prompter asks the user for input.
type Prompter interface {
	// ReadLine prints prompt and returns the line typed, trimmed.
	ReadLine(prompt string) (string, error)
	// ReadPassword prints prompt and returns what is typed, without echoing it.
	ReadPassword(prompt string) (string, error)
}

// TerminalPrompter prompts on out and reads from in, when in is a terminal; ok is false when it is
// not, since nobody would see the prompts.
func TerminalPrompter(in *os.File, out io.Writer) (p Prompter, ok bool) {
	if in == nil || !term.IsTerminal(int(in.Fd())) {
		return nil, false
	}
	return &terminalPrompter{in: in, out: out, lines: bufio.NewReader(in)}, true
}

type terminalPrompter struct {
	mu    sync.Mutex
	in    *os.File
	out   io.Writer
	lines *bufio.Reader
}

func (p *terminalPrompter) ReadLine(prompt string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.out, prompt)
	line, err := p.lines.ReadString('\n')
	if err != nil && line == "" {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

func (p *terminalPrompter) ReadPassword(prompt string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.out, prompt)
	password, err := term.ReadPassword(int(p.in.Fd()))
	// The user's Enter was not echoed either.
	fmt.Fprintln(p.out)
	if err != nil {
		return "", fmt.Errorf("reading the password: %w", err)
	}
	return string(password), nil
}
