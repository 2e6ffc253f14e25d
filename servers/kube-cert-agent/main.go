// Command pinniped-concierge-kube-cert-agent runs in the kube cert agent pod, which the Concierge
// places on a kube-controller-manager node with that pod's volumes mounted:
//
//	pinniped-concierge-kube-cert-agent sleep   # keep the pod alive until it is stopped
//	pinniped-concierge-kube-cert-agent print   # print the signing pair named by CERT_PATH and KEY_PATH
//
// print writes {"tls.crt": "<base64>", "tls.key": "<base64>"} to stdout; the Concierge reads it
// through pods/exec. The pod runs in a 32Mi memory limit while several execs may overlap, so this
// program imports nothing beyond a few standard packages (no fmt, no encoding/json).
package main

import (
	"encoding/base64"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr, stop))
}

const usage = "usage: pinniped-concierge-kube-cert-agent sleep|print\n"

// run executes one subcommand and returns the exit status.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer, stop <-chan os.Signal) int {
	if len(args) != 1 {
		_, _ = io.WriteString(stderr, usage)
		return 2
	}
	switch args[0] {
	case "sleep":
		<-stop
		return 0
	case "print":
		out, err := pair(getenv("CERT_PATH"), getenv("KEY_PATH"))
		if err != nil {
			_, _ = io.WriteString(stderr, err.Error()+"\n")
			return 1
		}
		if _, err := stdout.Write(out); err != nil {
			return 1
		}
		return 0
	}
	_, _ = io.WriteString(stderr, usage)
	return 2
}

// pair reads both files and encodes them as the JSON object print writes. Base64 needs no JSON
// escaping, so the document is assembled directly.
func pair(certPath, keyPath string) ([]byte, error) {
	if certPath == "" || keyPath == "" {
		return nil, errors.New("CERT_PATH and KEY_PATH must both be set")
	}
	cert, err := os.ReadFile(certPath)
	if err != nil {
		return nil, err
	}
	key, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, err
	}
	enc := base64.StdEncoding
	out := make([]byte, 0, 32+enc.EncodedLen(len(cert))+enc.EncodedLen(len(key)))
	out = append(out, `{"tls.crt":"`...)
	out = enc.AppendEncode(out, cert)
	out = append(out, `","tls.key":"`...)
	out = enc.AppendEncode(out, key)
	out = append(out, "\"}\n"...)
	return out, nil
}
