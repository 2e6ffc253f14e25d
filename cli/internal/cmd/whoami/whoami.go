// Package whoami implements "pinniped whoami": it asks the Concierge, through a WhoAmIRequest,
// which user the current kubeconfig authenticates as.
package whoami

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"sealion.dev/cli/internal/clientconfig"
	"sealion.dev/cli/internal/cmd/login/oidc"
	"sealion.dev/cli/internal/deps"
	identityv1alpha1 "sealion.dev/core/apis/concierge/identity/v1alpha1"
	"sealion.dev/core/groupsuffix"
)

type flags struct {
	kubeconfig        string
	kubeconfigContext string
	apiGroupSuffix    string
	output            string
	timeout           time.Duration
}

// NewCommand returns the "whoami" command.
func NewCommand(d deps.Deps) *cobra.Command {
	var f flags
	cmd := &cobra.Command{
		Use:          "whoami",
		Short:        "Print information about the current user",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.Context(), d, f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&f.kubeconfigContext, "kubeconfig-context", "", "Kubeconfig context name (default: current active context)")
	fs.StringVar(&f.apiGroupSuffix, "api-group-suffix", groupsuffix.Default, "Concierge API group suffix")
	fs.StringVarP(&f.output, "output", "o", "text", "Output format: text, yaml or json")
	fs.DurationVar(&f.timeout, "timeout", 0, "Timeout for the WhoAmI API request (0 means no timeout)")
	return cmd
}

func run(ctx context.Context, d deps.Deps, f flags) error {
	switch f.output {
	case "text", "yaml", "json":
	default:
		return fmt.Errorf("invalid output format %q: must be text, yaml or json", f.output)
	}
	loaded, err := clientconfig.Load(f.kubeconfig, f.kubeconfigContext)
	if err != nil {
		return err
	}
	restCfg, err := clientconfig.WithAPIGroupSuffix(loaded.REST, f.apiGroupSuffix)
	if err != nil {
		return err
	}
	client, err := d.NewConciergeClient(restCfg)
	if err != nil {
		return fmt.Errorf("building a Concierge client: %w", err)
	}
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	resp, err := client.IdentityV1alpha1().WhoAmIRequests().Create(ctx, &identityv1alpha1.WhoAmIRequest{}, metav1.CreateOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("could not create a WhoAmIRequest (is the Pinniped Concierge installed with API group suffix %q?): %w", f.apiGroupSuffix, err)
		}
		return fmt.Errorf("could not create a WhoAmIRequest: %w", err)
	}
	switch f.output {
	case "text":
		if err := writeText(d.Out, loaded, resp); err != nil {
			return err
		}
		return writeSession(d, loaded)
	default:
		return writeObject(d.Out, f.output, f.apiGroupSuffix, resp)
	}
}

func writeText(w io.Writer, loaded *clientconfig.Loaded, resp *identityv1alpha1.WhoAmIRequest) error {
	user := resp.Status.KubernetesUserInfo.User
	_, err := fmt.Fprintf(w, "Current cluster info:\n\nName: %s\nURL: %s\n\nCurrent user info:\n\nUsername: %s\nGroups: %s\n",
		loaded.Context.Cluster, loaded.Cluster.Server, user.Username, strings.Join(user.Groups, ", "))
	return err
}

// writeSession adds, when the kubeconfig logs in with "pinniped login oidc" and its issuer said
// when the session ends (a Supervisor's session policy), when that is. The WhoAmIRequest above
// ran the login, so the session cache holds the session in use.
func writeSession(d deps.Deps, loaded *clientconfig.Loaded) error {
	args, ok := oidc.ArgsOf(loaded)
	if !ok {
		return nil
	}
	issuer, tok, err := oidc.Session(d, args)
	if err != nil || tok == nil || tok.RefreshToken == nil || tok.RefreshToken.SessionExpiry.IsZero() {
		return nil //nolint:nilerr // the session's end is extra information: without it, the rest stands
	}
	end := tok.RefreshToken.SessionExpiry.Time
	_, err = fmt.Fprintf(d.Out, "\nCurrent session info:\n\nIssuer: %s\nSession ends: %s (in %s)\n",
		issuer, end.Local().Format(time.RFC3339), end.Sub(d.Now()).Round(time.Second))
	return err
}

// writeObject prints the WhoAmIRequest as the server named it, with the suffixed group.
func writeObject(w io.Writer, format, suffix string, resp *identityv1alpha1.WhoAmIRequest) error {
	out := resp.DeepCopy()
	group, _ := groupsuffix.Replace(identityv1alpha1.GroupName, suffix)
	out.APIVersion = group + "/" + identityv1alpha1.SchemeGroupVersion.Version
	out.Kind = "WhoAmIRequest"
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the WhoAmIRequest: %w", err)
	}
	if format == "yaml" {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return fmt.Errorf("encoding the WhoAmIRequest: %w", err)
		}
	} else {
		data = append(data, '\n')
	}
	_, err = w.Write(data)
	return err
}
