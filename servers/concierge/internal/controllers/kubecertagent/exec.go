package kubecertagent

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// PodExecutor runs commands in containers through the API server (pods/exec, SPDY), as kubectl
// exec does.
type PodExecutor struct {
	Config *rest.Config
	Client kubernetes.Interface
}

var _ Executor = (*PodExecutor)(nil)

// Exec runs command in the container and returns its standard output; a failure includes the
// command's standard error.
func (e *PodExecutor) Exec(ctx context.Context, namespace, pod, container string, command ...string) ([]byte, error) {
	req := e.Client.CoreV1().RESTClient().Post().
		Namespace(namespace).Resource("pods").Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: container,
			Command:   command,
			Stdout:    true,
			Stderr:    true,
		}, scheme.ParameterCodec)
	executor, err := remotecommand.NewSPDYExecutor(e.Config, http.MethodPost, req.URL())
	if err != nil {
		return nil, fmt.Errorf("preparing to exec in %s/%s: %w", namespace, pod, err)
	}
	var stdout, stderr bytes.Buffer
	if err := executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return nil, fmt.Errorf("%w: %s", err, msg)
		}
		return nil, err
	}
	return stdout.Bytes(), nil
}
