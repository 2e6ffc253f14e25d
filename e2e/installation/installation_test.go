package installation

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestNamesUnderTheInstallationsSuffix(t *testing.T) {
	acme := Installation{APIGroupSuffix: "auth.acme.example", Concierge: Server{Deployment: "acme-concierge"}}
	if got := acme.Group("login.concierge.pinniped.dev"); got != "login.concierge.auth.acme.example" {
		t.Errorf("Group = %q", got)
	}
	if got := acme.Group("apps"); got != "apps" {
		t.Errorf("Group renamed a group not ours: %q", got)
	}
	if got := acme.Concierge.Name("impersonation-proxy-ca-certificate"); got != "acme-concierge-impersonation-proxy-ca-certificate" {
		t.Errorf("Name = %q", got)
	}
	manifest := "apiVersion: authentication.concierge.pinniped.dev/v1alpha1\nkind: JWTAuthenticator\nmetadata: {name: dex}\n" +
		"---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {apiGroup: idp.supervisor.pinniped.dev}\n"
	renamed, err := acme.Rename(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(renamed, "apiVersion: authentication.concierge.auth.acme.example/v1alpha1") ||
		!strings.Contains(renamed, "apiGroup: idp.supervisor.pinniped.dev") {
		t.Errorf("renamed:\n%s\nwant our group renamed and a Secret's data left alone", renamed)
	}
	if same, err := Ours().Rename(manifest); err != nil || same != manifest {
		t.Errorf("our installation renamed %q to %q (%v)", manifest, same, err)
	}
	if _, err := acme.Rename("{not: [yaml"); err == nil {
		t.Error("a manifest that is not YAML was renamed without an error")
	}
}

func TestSummaryAndFile(t *testing.T) {
	if got := strings.Join(Ours().Summary(), "\n"); !strings.Contains(got, "installed by the suite") ||
		!strings.Contains(got, "deployment pinniped-supervisor/pinniped-supervisor") {
		t.Errorf("our summary: %s", got)
	}
	if _, err := Read(filepath.Join(t.TempDir(), File)); err == nil {
		t.Error("a missing file was read")
	}
	found := Installation{Discovered: true, APIGroupSuffix: "auth.acme.example", CredentialIssuer: "c",
		Strategies: []string{"KubeClusterSigningCertificate: Success (FetchedKey)"},
		Concierge:  Server{Namespace: "acme", Deployment: "pinniped-concierge", Image: "i:v1", Version: "v1"}}
	if got := strings.Join(found.Summary(), "\n"); got != "found installed, API group suffix auth.acme.example\n"+
		"Concierge: deployment acme/pinniped-concierge, image i:v1, version v1\n"+
		"CredentialIssuer c: KubeClusterSigningCertificate: Success (FetchedKey)\nSupervisor: none installed" {
		t.Errorf("summary:\n%s", got)
	}
}
