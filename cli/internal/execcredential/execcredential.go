// Package execcredential reads what kubectl tells a client-go credential plugin
// (KUBERNETES_EXEC_INFO) and writes the ExecCredential the plugin answers with.
package execcredential

import (
	"encoding/json"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime/schema"
	clientauthv1 "k8s.io/client-go/pkg/apis/clientauthentication/v1"
	clientauthv1beta1 "k8s.io/client-go/pkg/apis/clientauthentication/v1beta1"
)

// EnvVar is where kubectl passes the ExecCredential request to the plugin.
const EnvVar = "KUBERNETES_EXEC_INFO"

// Info is what kubectl asked for.
type Info struct {
	// APIVersion is the ExecCredential version to answer with.
	APIVersion string
	// Cluster is the cluster kubectl talks to, when its kubeconfig sets provideClusterInfo.
	Cluster *clientauthv1.Cluster
}

// ReadInfo parses KUBERNETES_EXEC_INFO. Without it (the plugin run by hand, or an old kubectl)
// the answer is v1beta1 with no cluster info.
func ReadInfo(getenv func(string) string) (*Info, error) {
	info := &Info{APIVersion: clientauthv1beta1.SchemeGroupVersion.String()}
	raw := getenv(EnvVar)
	if raw == "" {
		return info, nil
	}
	// v1 and v1beta1 ExecCredentials have the same JSON shape for the fields we read.
	var req clientauthv1.ExecCredential
	if err := json.Unmarshal([]byte(raw), &req); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", EnvVar, err)
	}
	switch req.APIVersion {
	case clientauthv1.SchemeGroupVersion.String(), clientauthv1beta1.SchemeGroupVersion.String():
		info.APIVersion = req.APIVersion
	default:
		return nil, fmt.Errorf("%s asks for ExecCredential version %q; supported are %s and %s", EnvVar, req.APIVersion,
			clientauthv1.SchemeGroupVersion, clientauthv1beta1.SchemeGroupVersion)
	}
	info.Cluster = req.Spec.Cluster
	return info, nil
}

// Write prints an ExecCredential of apiVersion with status as JSON.
func Write(w io.Writer, apiVersion string, status *clientauthv1beta1.ExecCredentialStatus) error {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return err
	}
	// The status has the same JSON in both versions, so one struct serves both.
	out := struct {
		APIVersion string                                  `json:"apiVersion"`
		Kind       string                                  `json:"kind"`
		Spec       struct{}                                `json:"spec"`
		Status     *clientauthv1beta1.ExecCredentialStatus `json:"status"`
	}{APIVersion: gv.String(), Kind: "ExecCredential", Status: status}
	enc := json.NewEncoder(w)
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("writing the ExecCredential: %w", err)
	}
	return nil
}
