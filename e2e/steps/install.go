package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
)

// RepoPath resolves a path relative to the repository root, wherever the suite runs from.
func RepoPath(rel string) string {
	_, file, _, _ := runtime.Caller(0) // e2e/steps/install.go
	return filepath.Join(filepath.Dir(file), "..", "..", rel)
}

// applyKustomization applies a kustomization folder with kubectl apply -k, server-side.
func applyKustomization(dir string) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		_, err := Kubectl(ctx, cfg.KubeconfigFile(), "", "apply", "--server-side", "-k", dir)
		return ctx, err
	}
}

// ApplyManifest applies YAML given as text.
func ApplyManifest(yaml string) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		_, err := Kubectl(ctx, cfg.KubeconfigFile(), yaml, "apply", "--server-side", "-f", "-")
		return ctx, err
	}
}

// WaitFor runs kubectl wait, e.g. WaitFor("crd --all", "condition=Established").
func WaitFor(timeout time.Duration, forCondition string, resource ...string) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		args := append([]string{"wait", "--for=" + forCondition, fmt.Sprintf("--timeout=%s", timeout)}, resource...)
		_, err := Kubectl(ctx, cfg.KubeconfigFile(), "", args...)
		return ctx, err
	}
}

// The release's install YAMLs, under Pinniped's names.
const (
	conciergeCRDsYAML      = "install-pinniped-concierge-crds.yaml"
	conciergeResourcesYAML = "install-pinniped-concierge-resources.yaml"
	supervisorYAML         = "install-pinniped-supervisor.yaml"
	localUserAuthYAML      = "install-local-user-authenticator.yaml"
)

// InstallConcierge installs the Concierge from the two YAMLs of the release in releaseDir
// (ReleaseDir, or PreviousReleaseDir), the second with the given kustomize components of
// servers/concierge/deploy/components (e.g. "signer-secret"), and waits until its APIs are
// served. Over an installed Concierge it is an upgrade (or a rollback): it also waits until the
// rollout is complete.
func InstallConcierge(releaseDir string, components ...string) []env.Func {
	return []env.Func{
		// CRDs first: the default CredentialIssuer needs its CRD established.
		applyRelease(releaseDir, conciergeCRDsYAML),
		WaitFor(time.Minute, "condition=Established", "crd/jwtauthenticators.authentication.concierge.pinniped.dev",
			"crd/webhookauthenticators.authentication.concierge.pinniped.dev", "crd/credentialissuers.config.concierge.pinniped.dev"),
		applyRelease(releaseDir, conciergeResourcesYAML, prefixed(RepoPath("servers/concierge/deploy/components"), components)...),
		rolledOut(3*time.Minute, "pinniped-concierge", "pinniped-concierge"),
		waitForAPIServices(2*time.Minute, server{"pinniped-concierge", "concierge", "/apis/login.concierge.pinniped.dev/v1alpha1"},
			"v1alpha1.login.concierge.pinniped.dev", "v1alpha1.identity.concierge.pinniped.dev"),
	}
}

// InstallSupervisor installs the Supervisor (CRDs included) from the YAML of the release in
// releaseDir and waits until its replicas are ready and its aggregated API is served; over an
// installed Supervisor, until the rollout is complete.
func InstallSupervisor(releaseDir string) []env.Func {
	return []env.Func{
		applyRelease(releaseDir, supervisorYAML),
		rolledOut(3*time.Minute, "pinniped-supervisor", "pinniped-supervisor"),
		waitForAPIServices(2*time.Minute, server{"pinniped-supervisor", "supervisor", "/apis/clientsecret.supervisor.pinniped.dev/v1alpha1"},
			"v1alpha1.clientsecret.supervisor.pinniped.dev"),
	}
}

// Uninstall deletes what the YAMLs of the release in releaseDir installed, as users uninstall:
// the Supervisor, the Concierge, then the Concierge's CRDs (with every object of theirs), each
// kubectl delete waiting until its objects are gone. What is not installed is passed over, a
// kind whose CRD is gone too (kubectl deletes the file's other objects and then fails on it).
func Uninstall(releaseDir string) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		for _, file := range []string{supervisorYAML, conciergeResourcesYAML, conciergeCRDsYAML} {
			_, err := Kubectl(ctx, cfg.KubeconfigFile(), "", "delete", "--ignore-not-found", "--wait", "--timeout=3m",
				"-f", filepath.Join(releaseDir, file))
			if err != nil && !strings.Contains(err.Error(), "ensure CRDs are installed first") {
				return ctx, err
			}
		}
		return ctx, nil
	}
}

// rolledOut waits until a Deployment's rollout is complete: every replica of its newest
// template ready and no older one left. When it is not, the error carries the namespace's pods
// and the last lines of each container that restarted, before its restart.
func rolledOut(timeout time.Duration, namespace, deployment string) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		kubeconfig := cfg.KubeconfigFile()
		_, err := Kubectl(ctx, kubeconfig, "", "rollout", "status", "-n", namespace, "deployment/"+deployment,
			fmt.Sprintf("--timeout=%s", timeout))
		if err == nil {
			return ctx, nil
		}
		pods, _ := Kubectl(ctx, kubeconfig, "", "get", "pods", "-n", namespace, "-o", "wide")
		report := "\n--- pods of " + namespace + ":\n" + pods
		restarted, _ := Kubectl(ctx, kubeconfig, "", "get", "pods", "-n", namespace, "-o",
			`jsonpath={range .items[?(@.status.containerStatuses[0].restartCount>0)]}{.metadata.name}{"\n"}{end}`)
		for _, pod := range strings.Fields(restarted) {
			logs, logErr := Kubectl(ctx, kubeconfig, "", "logs", "-n", namespace, pod, "--previous", "--all-containers", "--tail=20")
			if logErr != nil {
				logs = logErr.Error()
			}
			report += "\n--- " + pod + " before its last restart:\n" + logs
		}
		return ctx, fmt.Errorf("%w%s", err, report)
	}
}

func prefixed(dir string, names []string) []string {
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = filepath.Join(dir, n)
	}
	return paths
}

// server names an aggregated API server's pods, for diagnostics: its namespace, the value of its
// deployment.pinniped.dev label, and a path of its API.
type server struct{ namespace, deployment, apiPath string }

// waitForAPIServices waits until the aggregated APIs of srv are Available. When they are not, the
// error carries what tells why: the APIServices' status, which pods back the Service, and each
// pod's own answer for the API, asked through the API server's pod proxy.
func waitForAPIServices(timeout time.Duration, srv server, names ...string) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		args := []string{"wait", "--for=condition=Available", fmt.Sprintf("--timeout=%s", timeout)}
		for _, n := range names {
			args = append(args, "apiservice/"+n)
		}
		_, err := Kubectl(ctx, cfg.KubeconfigFile(), "", args...)
		if err == nil {
			return ctx, nil
		}
		kubeconfig := cfg.KubeconfigFile()
		diag := func(args ...string) string {
			out, err := Kubectl(ctx, kubeconfig, "", args...)
			if err != nil {
				return err.Error()
			}
			return out
		}
		report := "\n--- APIService conditions:\n" + diag(append([]string{"get", "-o",
			`jsonpath={range .items[*]}{.metadata.name}: {.status.conditions[*].message}{"\n"}{end}`, "apiservice"}, names...)...) +
			"\n--- " + srv.deployment + " endpoints and pods:\n" + diag("get", "endpointslices,pods", "-n", srv.namespace, "-o", "wide")
		pods := diag("get", "pods", "-n", srv.namespace, "-l", "deployment.pinniped.dev="+srv.deployment, "-o", "name")
		for _, pod := range strings.Fields(pods) {
			name := strings.TrimPrefix(pod, "pod/")
			report += "\n--- " + name + " answers for " + srv.apiPath + ":\n" + diag("get", "--raw",
				"/api/v1/namespaces/"+srv.namespace+"/pods/https:"+name+":10250/proxy"+srv.apiPath)
		}
		return ctx, fmt.Errorf("%w%s", err, report)
	}
}

// applyRelease applies one of the install YAMLs of the release in releaseDir as users do,
// kubectl apply -f. Given kustomize components, or images that PushImages pushed in place of the
// release's own, it applies the file through a kustomization with those, written in a temporary
// folder with a copy of the file, since kustomize reads resource files only below its own folder.
func applyRelease(releaseDir, file string, components ...string) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		path := filepath.Join(releaseDir, file)
		data, err := os.ReadFile(path)
		if err != nil {
			return ctx, fmt.Errorf("reading the release's %s (make release-check makes this commit's, the matrix's previous-release artifact the previous one): %w", file, err)
		}
		images := pushedFrom(ctx)
		if len(components) == 0 && len(images) == 0 {
			_, err := Kubectl(ctx, cfg.KubeconfigFile(), "", "apply", "--server-side", "-f", path)
			return ctx, err
		}
		dir, err := os.MkdirTemp("", "e2e-kustomization-")
		if err != nil {
			return ctx, err
		}
		defer os.RemoveAll(dir)
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o600); err != nil {
			return ctx, err
		}
		k, err := kustomization(dir, file, components, images)
		if err != nil {
			return ctx, err
		}
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o600); err != nil {
			return ctx, err
		}
		return applyKustomization(dir)(ctx, cfg)
	}
}

// kustomization is the text of a kustomization in dir over the resource file (in dir), the
// component folders and images.
func kustomization(dir, file string, components []string, images pushed) (string, error) {
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [" + file + "]\n"
	if len(components) > 0 {
		k += "components:\n"
	}
	for _, c := range components {
		k += "- " + relTo(dir, c) + "\n"
	}
	if len(images) > 0 {
		overrides, err := imageOverrides(images)
		if err != nil {
			return "", err
		}
		k += "images:\n" + overrides
	}
	return k, nil
}

// relTo is target relative to dir: kustomize takes relative paths to other kustomizations.
func relTo(dir, target string) string {
	abs, err := filepath.Abs(target)
	if err != nil {
		return target
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil {
		return abs
	}
	return rel
}

// InstallLocalUserAuthenticator installs the local-user-authenticator from the release's YAML
// and waits for it.
func InstallLocalUserAuthenticator() []env.Func {
	return []env.Func{
		applyRelease(ReleaseDir(), localUserAuthYAML),
		WaitFor(3*time.Minute, "condition=Available", "-n", "local-user-authenticator", "deployment/local-user-authenticator"),
	}
}

// UninstallLocalUserAuthenticator deletes what InstallLocalUserAuthenticator installed, for a
// cluster the suite does not delete.
func UninstallLocalUserAuthenticator() env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		_, err := Kubectl(ctx, cfg.KubeconfigFile(), "", "delete", "--ignore-not-found", "--wait", "--timeout=3m",
			"-f", filepath.Join(ReleaseDir(), localUserAuthYAML))
		return ctx, err
	}
}
