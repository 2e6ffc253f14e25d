package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"sealion.dev/e2e/steps"
)

// TestUpgradeFromPreviousRelease installs the previous release (steps.PreviousReleaseVersion)
// in place of this commit's, logs users in through the Concierge and the Supervisor, upgrades
// to this commit's release with kubectl apply as users do while those users keep exchanging
// tokens and refreshing their session, rolls back the same way, and uninstalls with both releases'
// YAMLs: no exchange and no refresh may fail, not even at a first try, the session must outlive
// both changes, and the uninstall must leave nothing of ours. At the end the cluster runs this commit's release again,
// as the suite installed it.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	skipIfInstalled(t, "replaces the installation with releases of ours")
	const name = "upgrade"
	var (
		fl       *federatedLogin
		exchange func(context.Context) error
		pinny    cliUser
	)
	previous, current := steps.PreviousReleaseDir(), steps.ReleaseDir()
	f := features.New("an upgrade from the previous release and a rollback, users logged in").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if !steps.ClusterFrom(ctx).Info.ChangesHost {
				t.Skip("cannot run here: the test uninstalls the servers and installs another release, which is not done to a cluster a user brings")
			}
			// The suite installed this commit's Concierge and, for the tests before this one, its
			// Supervisor: an administrator would remove them before installing another release.
			supervisorHost(ctx, t, cfg)
			runSteps(ctx, t, cfg, steps.Uninstall(current))
			expectNothingLeft(ctx, t, cfg)
			t.Cleanup(func() {
				ctx := context.WithoutCancel(ctx)
				if logs := os.Getenv("SEALION_E2E_LOGS"); logs != "" && t.Failed() {
					// The servers' logs as they were when the test failed, before they are replaced
					// (where the suite keeps logs: without a folder, a relative one would land in the
					// package's sources).
					if _, err := steps.CollectLogs(filepath.Join(logs, "upgrade-failed"))(ctx, cfg); err != nil {
						t.Logf("collecting the logs: %v", err)
					}
				}
				// Leave the cluster as the suite installed it, whatever release is installed now.
				if err := runAll(ctx, cfg, append([]env.Func{steps.Uninstall(previous)}, steps.InstallConcierge(current)...)...); err != nil {
					t.Errorf("installing this commit's Concierge again: %v", err)
				}
				if err := installSupervisor(ctx, cfg, current); err != nil {
					t.Errorf("installing this commit's Supervisor again: %v", err)
				}
			})
			runSteps(ctx, t, cfg, append([]env.Func{steps.LoadImages(steps.PreviousServerImageArchive())}, steps.InstallConcierge(previous)...)...)
			if err := installSupervisor(ctx, cfg, previous); err != nil {
				t.Fatalf("installing the previous release's Supervisor: %v", err)
			}
			t.Logf("the previous release %s is installed", steps.PreviousReleaseVersion)

			setUpLocalUsers(ctx, t, cfg)
			exchange = exchanger(ctx, t, cfg)
			directory, err := steps.StartLDAPForCluster(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = directory.Close() })
			fl, pinny = federateLDAP(ctx, t, cfg, name, directory.LDAPSAddress, directory)
			return ctx
		}).
		Assess("an upgrade to this commit's release fails no exchange and no refresh, and keeps the session", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			changeReleaseUnderLoad(ctx, t, cfg, current, exchange, fl, pinny)
			return ctx
		}).
		Assess("a rollback to the previous release fails no exchange and no refresh, and keeps the session", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			changeReleaseUnderLoad(ctx, t, cfg, previous, exchange, fl, pinny)
			return ctx
		}).
		Assess("an uninstall leaves nothing of ours in the cluster", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// As restarts.md says: the rollback kept the CRDs only this commit's release has (a
			// kubectl apply deletes nothing, and deleting a CRD would delete its objects), so the
			// uninstall deletes what both releases installed.
			runSteps(ctx, t, cfg, steps.Uninstall(previous), steps.Uninstall(current))
			expectNothingLeft(ctx, t, cfg)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// changeReleaseUnderLoad applies the release of releaseDir over the installed one, as an upgrade
// or a rollback does, while clients exchange tokens and u refreshes its session again and again:
// every exchange and every refresh must succeed at its first try, and the session must refresh
// once the change is complete.
func changeReleaseUnderLoad(ctx context.Context, t *testing.T, cfg *envconf.Config, releaseDir string, exchange func(context.Context) error, fl *federatedLogin, u cliUser) {
	t.Helper()
	load := startLoad(ctx, "exchanges", faultLoadClients, exchange)
	defer load.stop()
	time.Sleep(faultQuiet)
	began := time.Now()
	changed := make(chan error, 1)
	go func() {
		changed <- runAll(ctx, cfg, append(steps.InstallConcierge(releaseDir), steps.InstallSupervisor(releaseDir)...)...)
	}()
	done := false
	defer func() {
		if !done {
			<-changed // a failed refresh ended the test: let the apply finish before the cleanup uninstalls
		}
	}()
	// Each refresh that fails ends the test: the CLI would have started a new login.
	refreshes := 0
	for !done {
		select {
		case err := <-changed:
			done = true
			if err != nil {
				t.Fatalf("applying %s: %v", releaseDir, err)
			}
		default:
		}
		expectRefreshed(ctx, t, u)
		refreshes++
	}
	ended := time.Now()
	time.Sleep(faultQuiet)
	res := load.stop()
	t.Logf("%s applied and rolled out in %s; %d refreshes meanwhile, each kept the session", releaseDir, ended.Sub(began).Round(100*time.Millisecond), refreshes)
	res.expectNoFailure(t, "while "+releaseDir+" was applied", began, ended)
	if err := fl.waitServed(ctx); err != nil {
		t.Fatal(err)
	}
	expectRefreshed(ctx, t, u)
}

// expectNothingLeft lists every object of every kind the cluster serves and fails on any that
// names Pinniped (our namespaces, CRDs, APIServices, RBAC, webhooks, and whatever the servers
// made at run time); events are records of what happened, not objects of ours.
func expectNothingLeft(ctx context.Context, t *testing.T, cfg *envconf.Config) {
	t.Helper()
	kubeconfig := cfg.KubeconfigFile()
	out, err := steps.Kubectl(ctx, kubeconfig, "", "api-resources", "--verbs=list", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range strings.Fields(out) {
		if r != "events" && r != "events.events.k8s.io" {
			kinds = append(kinds, r)
		}
	}
	list, err := steps.Kubectl(ctx, kubeconfig, "", "get", strings.Join(kinds, ","), "--all-namespaces", "-o",
		`jsonpath={range .items[*]}{.kind} {.metadata.namespace}/{.metadata.name}{"\n"}{end}`)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	objects := 0
	for line := range strings.SplitSeq(list, "\n") {
		if line == "" {
			continue
		}
		objects++
		if strings.Contains(strings.ToLower(line), "pinniped") {
			left = append(left, line)
		}
	}
	// A cluster holds at least its control plane's pods, Services and RBAC: a listing without
	// them would prove nothing.
	if objects < 50 {
		t.Fatalf("listed only %d objects of %d kinds:\n%s", objects, len(kinds), list)
	}
	if len(left) > 0 {
		t.Errorf("left in the cluster after the uninstall (of %d objects of %d kinds):\n%s", objects, len(kinds), strings.Join(left, "\n"))
	}
	t.Logf("after the uninstall, nothing naming Pinniped among %d objects of %d kinds", objects, len(kinds))
}

// runSteps runs environment steps in order, ending the test at the first that fails.
func runSteps(ctx context.Context, t *testing.T, cfg *envconf.Config, fns ...env.Func) {
	t.Helper()
	if err := runAll(ctx, cfg, fns...); err != nil {
		t.Fatal(err)
	}
}

// runAll runs environment steps in order, up to the first that fails.
func runAll(ctx context.Context, cfg *envconf.Config, fns ...env.Func) error {
	for i, fn := range fns {
		if _, err := fn(ctx, cfg); err != nil {
			return fmt.Errorf("step %d of %d: %w", i+1, len(fns), err)
		}
	}
	return nil
}
