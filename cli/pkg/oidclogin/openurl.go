package oidclogin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// OpenURL opens rawURL in the user's browser without waiting for it: with the first command of
// $BROWSER that starts (a list separated by the system's path list separator, ":" or ";" on
// Windows, in which "%s" stands for the URL, else the URL is the last argument), or else with the
// system's own opener.
func OpenURL(rawURL string) error {
	return openURL(rawURL, os.Getenv("BROWSER"))
}

// systemOpener is the command that opens a URL in the default browser on goos: open on macOS;
// on Windows url.dll's handler, which takes the URL as one argument (cmd's start would split it
// at every "&"); xdg-open elsewhere (Linux and the BSDs).
func systemOpener(goos, rawURL string) []string {
	switch goos {
	case "darwin":
		return []string{"open", rawURL}
	case "windows":
		return []string{"rundll32", "url.dll,FileProtocolHandler", rawURL}
	default:
		return []string{"xdg-open", rawURL}
	}
}

func openURL(rawURL, browserEnv string) error {
	commands := [][]string{systemOpener(runtime.GOOS, rawURL)}
	if browserEnv != "" {
		commands = nil
		for _, entry := range filepath.SplitList(browserEnv) {
			args := strings.Fields(entry)
			if len(args) == 0 {
				continue
			}
			substituted := false
			for i, a := range args {
				if strings.Contains(a, "%s") {
					args[i], substituted = strings.ReplaceAll(a, "%s", rawURL), true
				}
			}
			if !substituted {
				args = append(args, rawURL)
			}
			commands = append(commands, args)
		}
	}
	var errs []error
	for _, args := range commands {
		// The browser's output must not reach stdout, which carries the ExecCredential.
		cmd := exec.Command(args[0], args[1:]...)
		if err := cmd.Start(); err != nil {
			errs = append(errs, err)
			continue
		}
		go func() { _ = cmd.Wait() }()
		return nil
	}
	return fmt.Errorf("could not open a browser (set $BROWSER): %w", errors.Join(errs...))
}
