package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/yaml"

	"sealion.dev/e2e/steps"
	"sealion.dev/fixtures/browser"
	"sealion.dev/fixtures/dex"
	"sealion.dev/fixtures/ldap"
)

// verificationLink is the device flow's link to the verification page, with the code filled in,
// as the CLI prints it.
var verificationLink = regexp.MustCompile(`https://\S+/device\?user_code=\S+`)

// TestSupervisorDeviceLogin: logins with the device authorization grant (`pinniped get kubeconfig
// --oidc-flow=device`). kubectl's plugin prints the link to the Supervisor's verification page and
// polls while Chromium approves there and logs in through Dex, then through the Supervisor's LDAP
// form, both identity providers of one FederationDomain. A used user code, a wrong one, a denied
// request and an expired one each end with the page's or the CLI's message, and no session.
func TestSupervisorDeviceLogin(t *testing.T) {
	const fdName = "device-login"
	var (
		fl       *federatedLogin
		chromium *browser.Browser
		usedLink string
	)
	deviceUser := func(ctx context.Context, t *testing.T, idpName string) cliUser {
		return fl.userWith(ctx, t, []string{"--upstream-identity-provider-name", idpName, "--oidc-flow", "device"})
	}
	f := features.New("device logins through the Supervisor").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			host := supervisorHost(ctx, t, cfg)
			idp := startDexIDP(ctx, t, cfg, host, fdName, "device-dex")
			directory, err := steps.StartLDAPForCluster(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = directory.Close() })
			createLDAPIDP(ctx, t, cfg, "device-ldap", directory.LDAPSAddress, directory)
			fl = federate(ctx, t, cfg, host, fdName, federationIDP("device-dex", "OIDCIdentityProvider", "device-dex", "")+
				federationIDP("device-ldap", "LDAPIdentityProvider", "device-ldap", ""))
			bindGroup(ctx, t, cfg, "e2e-supervisor-device-seals", "seals")
			chromium = fl.browser(ctx, t, idp.CABundle)
			return ctx
		}).
		Assess("kubectl logs in through Dex, approved on the verification page", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			u := deviceUser(ctx, t, "device-dex")
			began := time.Now()
			out, err := u.kubectlWithBrowserLogin(ctx, t, chromium, dexLogin(dex.DefaultUser), "get", "pods", "-n", "kube-system")
			if err != nil {
				t.Fatalf("kubectl: %v\n%s", err, out)
			}
			t.Logf("first kubectl, device login included: %s", time.Since(began).Round(time.Millisecond))
			if !strings.Contains(out, "logging in with the device flow") || !strings.Contains(out, "and enter the code ") {
				t.Errorf("the plugin did not log in with the device flow:\n%s", out)
			}
			usedLink = verificationLink.FindString(out)
			if _, stderr, err := u.kubectlOutput(ctx, "get", "pods", "-n", "kube-system"); err != nil || strings.Contains(stderr, "https://") {
				t.Fatalf("the second kubectl should need no login: %v\n%s", err, stderr)
			}
			expectWhoami(ctx, t, u, "username: "+dex.DefaultUser.Email, "- seals")
			return ctx
		}).
		Assess("kubectl logs in through LDAP on the Supervisor's form", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			u := deviceUser(ctx, t, "device-ldap")
			login := browser.Login{Username: "pinny", Password: ldap.DefaultUsers[0].Password, Form: browser.SupervisorForm}
			if out, err := u.kubectlWithBrowserLogin(ctx, t, chromium, login, "get", "pods", "-n", "kube-system"); err != nil {
				t.Fatalf("kubectl: %v\n%s", err, out)
			}
			expectWhoami(ctx, t, u, "username: pinny", "- seals")
			return ctx
		}).
		Assess("a used code is refused on the verification page", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if usedLink == "" {
				t.Fatal("no link from the first login")
			}
			text, err := chromium.Page(ctx, usedLink, nil, []string{"#continue"}, ".error")
			if err != nil || !strings.Contains(text, "already used") {
				t.Errorf("the used code's page: %q, %v", text, err)
			}
			return ctx
		}).
		Assess("a wrong code is refused, a denied request ends the login with no session", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			u := deviceUser(ctx, t, "device-dex")
			out, ok := u.loginWithLink(ctx, t, func(ctx context.Context, link string) error {
				text, err := chromium.Page(ctx, withoutQuery(link), map[string]string{"#user_code": "BCDF-GHJK"}, []string{"#continue"}, ".error")
				if err != nil || !strings.Contains(text, "not valid") {
					return fmt.Errorf("a wrong code's page: %q, %w", text, err)
				}
				if text, err = chromium.Page(ctx, link, nil, []string{"#continue", "#deny"}, "#message"); err != nil || !strings.Contains(text, "denied") {
					return fmt.Errorf("denying: %q, %w", text, err)
				}
				return nil
			})
			if ok || !strings.Contains(out, "the device login was denied on the verification page") {
				t.Errorf("the login after the denial: succeeded %v\n%s", ok, out)
			}
			u.expectNoSession(t)
			return ctx
		}).
		Assess("an expired code ends the login with no session", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			u := deviceUser(ctx, t, "device-dex")
			out, ok := u.loginWithLink(ctx, t, func(ctx context.Context, link string) error {
				expirePendingDeviceRequests(ctx, t, cfg)
				if text, err := chromium.Page(ctx, link, nil, []string{"#continue"}, ".error"); err != nil || !strings.Contains(text, "has expired") {
					return fmt.Errorf("an expired code's page: %q, %w", text, err)
				}
				return nil
			})
			if ok || !strings.Contains(out, "the code expired before the login was approved") {
				t.Errorf("the login after the expiry: succeeded %v\n%s", ok, out)
			}
			u.expectNoSession(t)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// loginWithLink runs u's login plugin, as kubectl would for one credential, hands the login link
// it prints to act, and returns the plugin's output and whether it succeeded. An error of act
// fails the test. (kubectl itself runs the plugin again after a failed login, which would start
// another device request and wait for it.)
func (u cliUser) loginWithLink(ctx context.Context, t *testing.T, act func(ctx context.Context, link string) error) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	kc, err := clientcmd.LoadFromFile(u.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, u.cli, kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo].Exec.Args...)
	cmd.Env = u.env()
	out, err := steps.RunWithLoginLink(ctx, cmd, act)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return out, cmd.ProcessState.Success()
}

// expectNoSession checks that u's session cache holds no session.
func (u cliUser) expectNoSession(t *testing.T) {
	t.Helper()
	raw, err := os.ReadFile(u.sessionCache)
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Sessions []any `json:"sessions"`
	}
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatalf("the session cache: %v", err)
	}
	if len(f.Sessions) != 0 {
		t.Errorf("the session cache holds %d sessions, want none:\n%s", len(f.Sessions), raw)
	}
}

// withoutQuery is link without its query: the verification page without the code filled in.
func withoutQuery(link string) string {
	u, err := url.Parse(link)
	if err != nil {
		return link
	}
	u.RawQuery = ""
	return u.String()
}

// expirePendingDeviceRequests makes the Supervisor's pending device requests expire now, as ten
// minutes would: it moves the expiry in their stored records (Secrets of type
// storage.pinniped.dev/device) into the past.
func expirePendingDeviceRequests(ctx context.Context, t *testing.T, cfg *envconf.Config) {
	t.Helper()
	secrets := kubeClient(t, cfg).CoreV1().Secrets(underTest(ctx).Supervisor.Namespace)
	list, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: "storage.pinniped.dev/type=device"})
	if err != nil {
		t.Fatal(err)
	}
	expired := 0
	for _, listed := range list.Items {
		// The plugin's polls write the record too: each try starts from its latest version.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s, err := secrets.Get(ctx, listed.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			var rec struct {
				Device  map[string]any `json:"device"`
				Version string         `json:"version"`
			}
			if err := json.Unmarshal(s.Data["pinniped-storage-data"], &rec); err != nil {
				return fmt.Errorf("Secret %s: %w", s.Name, err)
			}
			if rec.Device["state"] != "pending" {
				return nil
			}
			rec.Device["expiresAt"] = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
			if s.Data["pinniped-storage-data"], err = json.Marshal(rec); err != nil {
				return err
			}
			if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
				return err
			}
			expired++
			return nil
		})
		if err != nil {
			t.Fatalf("expiring Secret %s: %v", listed.Name, err)
		}
	}
	if expired == 0 {
		t.Fatal("no pending device request was found to expire")
	}
}
