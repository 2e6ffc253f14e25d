// Package installation describes the Concierge and Supervisor a suite tests: the ones it
// installs from our release, or, in installed mode, those a user installed, as the suite found
// them (e2e/steps.Discover). The suite saves it with its logs, and the matrix's report starts with
// it.
package installation

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"sealion.dev/core/groupsuffix"
)

// Installation is the Concierge and Supervisor a suite tests: the ones it installs from our
// release (Ours), or, in installed mode, those it found (DiscoverInstallation).
type Installation struct {
	// Discovered is true when a user installed them, not the suite.
	Discovered bool `json:"discovered"`
	// APIGroupSuffix is the suffix of the Pinniped API groups they serve ("pinniped.dev" by
	// default); the suites write their objects in the default groups and the cluster's client
	// and Kubectl rename them (Rename).
	APIGroupSuffix string `json:"apiGroupSuffix"`
	// CredentialIssuer is the name of the Concierge's CredentialIssuer, and Strategies what its
	// status says of each strategy, as "Type: Status (Reason)", when it was found.
	CredentialIssuer string   `json:"credentialIssuer"`
	Strategies       []string `json:"strategies,omitempty"`
	Concierge        Server   `json:"concierge"`
	// Supervisor is nil where none is installed: the Supervisor's identity paths cannot run.
	Supervisor *Server `json:"supervisor,omitempty"`
}

// Server is one of an installation's Deployments.
type Server struct {
	Namespace string `json:"namespace"`
	// Deployment is the Deployment's name, which is also the app name Pinniped derives the names
	// of the server's other objects from (Name).
	Deployment string `json:"deployment"`
	// Image is the image of its first container, and Version the app.kubernetes.io/version label
	// Helm charts put on the Deployment, else the image's tag (empty for an image by digest).
	Image   string `json:"image,omitempty"`
	Version string `json:"version,omitempty"`
	// Pods selects its pods, and HTTPSPort is the container port named https (the Supervisor's
	// endpoints), 0 when it has none.
	Pods      map[string]string `json:"pods,omitempty"`
	HTTPSPort int32             `json:"httpsPort,omitempty"`
}

// Name is the name of one of the server's objects named after its app, as Pinniped names them:
// Name("impersonation-proxy-ca-certificate") is "pinniped-concierge-impersonation-proxy-ca-certificate".
func (s Server) Name(suffix string) string { return s.Deployment + "-" + suffix }

// OurInstallation is what the suites install from our release: the install YAMLs' namespaces,
// names and default API group suffix.
func Ours() Installation {
	return Installation{
		APIGroupSuffix:   groupsuffix.Default,
		CredentialIssuer: "pinniped-concierge-config",
		Concierge: Server{Namespace: "pinniped-concierge", Deployment: "pinniped-concierge",
			Pods: map[string]string{"deployment.pinniped.dev": "concierge"}},
		Supervisor: &Server{Namespace: "pinniped-supervisor", Deployment: "pinniped-supervisor",
			Pods: map[string]string{"deployment.pinniped.dev": "supervisor"}, HTTPSPort: 8443},
	}
}

// Group is one of our API groups ("login.concierge.pinniped.dev") under the installation's suffix.
func (i Installation) Group(group string) string {
	g, _ := groupsuffix.Replace(group, i.APIGroupSuffix)
	return g
}

// Rename rewrites YAML documents written in our default API groups to the installation's
// suffix; with the default suffix it returns them as they are.
func (i Installation) Rename(yamlDocs string) (string, error) {
	if i.APIGroupSuffix == groupsuffix.Default || i.APIGroupSuffix == "" {
		return yamlDocs, nil
	}
	out, err := groupsuffix.RewriteManifest([]byte(yamlDocs), i.APIGroupSuffix)
	if err != nil {
		return "", fmt.Errorf("renaming the API groups to suffix %s: %w", i.APIGroupSuffix, err)
	}
	return string(out), nil
}

// Summary is the installation in one line per server, for logs and reports.
func (i Installation) Summary() []string {
	who := "installed by the suite from this commit's release"
	if i.Discovered {
		who = "found installed"
	}
	lines := []string{fmt.Sprintf("%s, API group suffix %s", who, i.APIGroupSuffix),
		"Concierge: " + i.Concierge.summary()}
	if i.CredentialIssuer != "" {
		lines = append(lines, fmt.Sprintf("CredentialIssuer %s: %s", i.CredentialIssuer, strings.Join(i.Strategies, "; ")))
	}
	if i.Supervisor != nil {
		lines = append(lines, "Supervisor: "+i.Supervisor.summary())
	} else {
		lines = append(lines, "Supervisor: none installed")
	}
	return lines
}

func (s Server) summary() string {
	text := fmt.Sprintf("deployment %s/%s", s.Namespace, s.Deployment)
	if s.Image != "" {
		text += ", image " + s.Image
	}
	if s.Version != "" {
		text += ", version " + s.Version
	}
	return text
}

// InstalledEnv set to true runs the suites against the Concierge and Supervisor a user installed
// (matrix --installed): they are discovered (e2e/steps.DiscoverInstallation) instead of installed
// from our release, and nothing of theirs is changed.
const InstalledEnv = "SEALION_E2E_INSTALLED"

// Installed reports whether InstalledEnv asks for installed mode.
func Installed() bool { return os.Getenv(InstalledEnv) == "true" }

// File is the file, in a suite's log folder for its cluster, where it saves the installation it
// tested (e2e/steps.SaveInstallation).
const File = "installation.json"

// Read reads a File.
func Read(path string) (Installation, error) {
	var i Installation
	data, err := os.ReadFile(path)
	if err != nil {
		return i, err
	}
	if err := json.Unmarshal(data, &i); err != nil {
		return i, fmt.Errorf("reading %s: %w", path, err)
	}
	return i, nil
}
