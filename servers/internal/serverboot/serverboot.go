// Package serverboot holds what each of our servers does first: structured logging at the
// configured level, a client configuration for the cluster it serves, and its trace exporter.
package serverboot

import (
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	logsapi "k8s.io/component-base/logs/api/v1"
)

// Log is the log key of the Concierge's and the Supervisor's configuration files.
type Log struct {
	// Level is info, debug, trace or all.
	Level string `json:"level,omitempty"`
	// Format is json or empty, which also means json: Pinniped's only choices.
	Format string `json:"format,omitempty"`
}

// Validate reports an unknown level or format, naming the key.
func (l Log) Validate() error {
	var errs []error
	if _, err := Verbosity(l.Level); err != nil {
		errs = append(errs, err)
	}
	if l.Format != "" && l.Format != "json" {
		errs = append(errs, errors.New("log.format: invalid log format, valid choices are the empty string or 'json'"))
	}
	return errors.Join(errs...)
}

// Verbosity maps a configured log level to klog's verbosity.
func Verbosity(level string) (int, error) {
	switch level {
	case "info":
		return 0, nil
	case "debug":
		return 4, nil
	case "trace":
		return 6, nil
	case "all":
		return 108, nil
	}
	return 0, fmt.Errorf("log.level: must be one of info, debug, trace, all; got %q", level)
}

// SetUpLogging switches klog to JSON at the configured level.
func SetUpLogging(level string) error {
	v, err := Verbosity(level)
	if err != nil {
		return err
	}
	c := logsapi.NewLoggingConfiguration()
	c.Format = logsapi.JSONLogFormat
	c.Verbosity = logsapi.VerbosityLevel(v)
	return logsapi.ValidateAndApply(c, nil)
}

// KubeRESTConfig is the configuration of kubeconfig, or the in-cluster one when it is empty.
//
// Its clients are not rate limited on our side. client-go's default of 5 requests a second
// (bursts of 10) capped what the servers do for their users: a Supervisor login is about 13
// requests, a CertificateSigningRequest exchange 4, and the Concierge's controllers write each
// JWTAuthenticator's status, so 1,000 of them took three minutes to be Ready (make bench). The
// API server's priority and fairness bounds what a server may take, as it does for any client.
func KubeRESTConfig(kubeconfig string) (*rest.Config, error) {
	config, err := loadKubeRESTConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	config.QPS = -1
	return config, nil
}

func loadKubeRESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		config, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("loading the in-cluster configuration (pass --kubeconfig outside a cluster): %w", err)
		}
		return config, nil
	}
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	return config, nil
}
