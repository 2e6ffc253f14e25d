package kubeconfig

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"sealion.dev/cli/internal/deps"
	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
)

// credentialIssuer returns the named CredentialIssuer, or the only one when name is empty.
func credentialIssuer(ctx context.Context, client deps.ConciergeClient, name string) (*configv1alpha1.CredentialIssuer, error) {
	if name != "" {
		ci, err := client.ConfigV1alpha1().CredentialIssuers().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("getting CredentialIssuer %q: %w", name, err)
		}
		return ci, nil
	}
	list, err := client.ConfigV1alpha1().CredentialIssuers().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing CredentialIssuers (is the Pinniped Concierge installed, with this API group suffix?): %w", err)
	}
	switch len(list.Items) {
	case 0:
		return nil, errors.New("no CredentialIssuers were found (is the Pinniped Concierge installed, with this API group suffix?)")
	case 1:
		return &list.Items[0], nil
	}
	names := make([]string, 0, len(list.Items))
	for _, ci := range list.Items {
		names = append(names, ci.Name)
	}
	return nil, fmt.Errorf("several CredentialIssuers were found (%s): choose one with --concierge-credential-issuer", strings.Join(names, ", "))
}

// waitWhilePending polls the CredentialIssuer until none of its strategies is Pending (an
// impersonation proxy waiting for its load balancer, say), and returns the last version read.
func waitWhilePending(ctx context.Context, client deps.ConciergeClient, ci *configv1alpha1.CredentialIssuer, interval time.Duration, log func(string)) (*configv1alpha1.CredentialIssuer, error) {
	if !hasPending(ci) {
		return ci, nil
	}
	log(fmt.Sprintf("waiting for CredentialIssuer %s: a strategy is pending", ci.Name))
	err := wait.PollUntilContextCancel(ctx, interval, false, func(ctx context.Context) (bool, error) {
		latest, err := client.ConfigV1alpha1().CredentialIssuers().Get(ctx, ci.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil // a transient error; try again until the timeout
		}
		ci = latest
		return !hasPending(ci), nil
	})
	if err != nil {
		return nil, fmt.Errorf("CredentialIssuer %s still has pending strategies (use --concierge-skip-wait not to wait, or a longer --timeout): %w", ci.Name, err)
	}
	return ci, nil
}

func hasPending(ci *configv1alpha1.CredentialIssuer) bool {
	for _, s := range ci.Status.Strategies {
		if s.Reason == configv1alpha1.StrategyReasonPending {
			return true
		}
	}
	return false
}

// frontend is where clients get credentials, as the chosen strategy advertises it.
type frontend struct {
	mode configv1alpha1.FrontendType
	// endpoint and caBundle (PEM) reach the impersonation proxy; empty when the strategy does not
	// say. The TokenCredentialRequest API's advertised ones are not read: it is reached through
	// the kubeconfig's cluster.
	endpoint string
	caBundle []byte
}

// chooseFrontend picks the frontend of a successful strategy: the one of type mode when given,
// else the TokenCredentialRequest API, else the impersonation proxy.
func chooseFrontend(ci *configv1alpha1.CredentialIssuer, mode configv1alpha1.FrontendType) (*frontend, error) {
	preference := []configv1alpha1.FrontendType{configv1alpha1.FrontendTypeTokenCredentialRequestAPI, configv1alpha1.FrontendTypeImpersonationProxy}
	if mode != "" {
		preference = []configv1alpha1.FrontendType{mode}
	}
	for _, want := range preference {
		for _, s := range ci.Status.Strategies {
			if s.Status != configv1alpha1.StrategyStatusSuccess || s.Frontend == nil || s.Frontend.Type != want {
				continue
			}
			return frontendOf(s.Frontend)
		}
	}
	var problems []string
	for _, s := range ci.Status.Strategies {
		problems = append(problems, fmt.Sprintf("%s: %s/%s: %s", s.Type, s.Status, s.Reason, s.Message))
	}
	what := "any successful strategy"
	if mode != "" {
		what = "a successful strategy with frontend " + string(mode)
	}
	if len(problems) == 0 {
		problems = []string{"no strategies"}
	}
	return nil, fmt.Errorf("CredentialIssuer %s does not have %s (%s)", ci.Name, what, strings.Join(problems, "; "))
}

func frontendOf(fe *configv1alpha1.CredentialIssuerFrontend) (*frontend, error) {
	out := &frontend{mode: fe.Type}
	info := fe.ImpersonationProxyInfo
	if fe.Type != configv1alpha1.FrontendTypeImpersonationProxy || info == nil {
		return out, nil
	}
	out.endpoint = info.Endpoint
	if info.CertificateAuthorityData != "" {
		ca, err := base64.StdEncoding.DecodeString(info.CertificateAuthorityData)
		if err != nil {
			return nil, fmt.Errorf("decoding the %s frontend's CA bundle: %w", fe.Type, err)
		}
		out.caBundle = ca
	}
	return out, nil
}

// authenticator is the Concierge authenticator the generated kubeconfig logs in through.
type authenticator struct {
	cliType string // "jwt" or "webhook"
	name    string
	jwt     *authv1alpha1.JWTAuthenticatorSpec
}

// findAuthenticator returns the authenticator named by the flags, or the only one there is.
func findAuthenticator(ctx context.Context, client deps.ConciergeClient, cliType, name string) (*authenticator, error) {
	var found []authenticator
	if cliType == "" || cliType == "jwt" {
		list, err := client.AuthenticationV1alpha1().JWTAuthenticators().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing JWTAuthenticators: %w", err)
		}
		for i := range list.Items {
			found = append(found, authenticator{cliType: "jwt", name: list.Items[i].Name, jwt: &list.Items[i].Spec})
		}
	}
	if cliType == "" || cliType == "webhook" {
		list, err := client.AuthenticationV1alpha1().WebhookAuthenticators().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing WebhookAuthenticators: %w", err)
		}
		for _, w := range list.Items {
			found = append(found, authenticator{cliType: "webhook", name: w.Name})
		}
	}
	if name != "" {
		var named []authenticator
		for _, a := range found {
			if a.name == name {
				named = append(named, a)
			}
		}
		found = named
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no authenticators were found%s", describe(cliType, name))
	case 1:
		return &found[0], nil
	}
	return nil, fmt.Errorf("several authenticators were found%s: choose one with --concierge-authenticator-type and --concierge-authenticator-name", describe(cliType, name))
}

func describe(cliType, name string) string {
	var parts []string
	if cliType != "" {
		parts = append(parts, "type "+cliType)
	}
	if name != "" {
		parts = append(parts, "name "+name)
	}
	if len(parts) == 0 {
		return ""
	}
	return " with " + strings.Join(parts, " and ")
}
