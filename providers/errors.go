package providers

import (
	"errors"
	"fmt"
)

// StepError is returned by Create when one step of bringing a cluster up failed.
type StepError struct {
	// Cluster is the name given to Create.
	Cluster string
	// Step names what was being done ("start containerd", "kubeadm init", ...).
	Step string
	// LogsDir holds the logs collected when the step failed; it survives the clean-up.
	LogsDir string
	// Err is the cause.
	Err error
}

func (e *StepError) Error() string {
	msg := fmt.Sprintf("creating cluster %q: step %q failed", e.Cluster, e.Step)
	if e.LogsDir != "" {
		msg += fmt.Sprintf(" (logs kept in %s)", e.LogsDir)
	}
	return msg + ": " + e.Err.Error()
}

func (e *StepError) Unwrap() error { return e.Err }

// ErrImageLoadUnsupported is returned (wrapped) by LoadImageArchives when the cluster's runtime
// cannot be given images directly; push them to a registry the cluster can pull from instead.
var ErrImageLoadUnsupported = errors.New("loading image archives is not supported by this provider")
