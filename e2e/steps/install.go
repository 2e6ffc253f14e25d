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

// ApplyKustomization applies a kustomization folder with kubectl apply -k, server-side.
func ApplyKustomization(dir string) env.Func {
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

// InstallConcierge installs the Concierge from servers/concierge/deploy, with the given kustomize
// components of deploy/components (e.g. "signer-secret"), and waits until its APIs are served.
func InstallConcierge(components ...string) []env.Func {
	return []env.Func{
		// CRDs first: the default CredentialIssuer needs its CRD established.
		ApplyKustomization(RepoPath("servers/concierge/deploy/crds")),
		WaitFor(time.Minute, "condition=Established", "crd/jwtauthenticators.authentication.concierge.pinniped.dev",
			"crd/webhookauthenticators.authentication.concierge.pinniped.dev", "crd/credentialissuers.config.concierge.pinniped.dev"),
		applyWithComponents(RepoPath("servers/concierge/deploy"), components...),
		WaitFor(3*time.Minute, "condition=Available", "-n", "pinniped-concierge", "deployment/pinniped-concierge"),
		waitForAPIServices(2*time.Minute, server{"pinniped-concierge", "concierge", "/apis/login.concierge.pinniped.dev/v1alpha1"},
			"v1alpha1.login.concierge.pinniped.dev", "v1alpha1.identity.concierge.pinniped.dev"),
	}
}

// InstallSupervisor installs the Supervisor (CRDs included) from servers/supervisor/deploy and
// waits until its replicas are ready and its aggregated API is served.
func InstallSupervisor() []env.Func {
	return []env.Func{
		applyWithComponents(RepoPath("servers/supervisor/deploy")),
		WaitFor(3*time.Minute, "condition=Available", "-n", "pinniped-supervisor", "deployment/pinniped-supervisor"),
		waitForAPIServices(2*time.Minute, server{"pinniped-supervisor", "supervisor", "/apis/clientsecret.supervisor.pinniped.dev/v1alpha1"},
			"v1alpha1.clientsecret.supervisor.pinniped.dev"),
	}
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

// applyWithComponents applies base plus components, with the images PushImages pushed in place
// of the manifests' own, through a kustomization written in a temporary folder, since kustomize
// refuses one inside the folder of the base it builds on.
func applyWithComponents(base string, components ...string) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		images := pushedFrom(ctx)
		if len(components) == 0 && len(images) == 0 {
			return ApplyKustomization(base)(ctx, cfg)
		}
		dir, err := os.MkdirTemp("", "e2e-kustomization-")
		if err != nil {
			return ctx, err
		}
		defer os.RemoveAll(dir)
		k, err := kustomization(dir, base, components, images)
		if err != nil {
			return ctx, err
		}
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o600); err != nil {
			return ctx, err
		}
		return ApplyKustomization(dir)(ctx, cfg)
	}
}

// kustomization is the text of a kustomization in dir over base, its components and images.
func kustomization(dir, base string, components []string, images pushed) (string, error) {
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [" + relTo(dir, base) + "]\n"
	if len(components) > 0 {
		k += "components:\n"
	}
	for _, c := range components {
		k += "- " + relTo(dir, filepath.Join(base, "components", c)) + "\n"
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

// InstallLocalUserAuthenticator installs the local-user-authenticator and waits for it.
func InstallLocalUserAuthenticator() []env.Func {
	return []env.Func{
		applyWithComponents(RepoPath("servers/local-user-authenticator/deploy")),
		WaitFor(3*time.Minute, "condition=Available", "-n", "local-user-authenticator", "deployment/local-user-authenticator"),
	}
}
