package clusterinfo

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
)

const kubeadmClusterInfo = `apiVersion: v1
kind: Config
clusters:
- name: ""
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority-data: ` + "Q0EgUEVN" + ` # "CA PEM"
`

// Read finds the ConfigMap, and tells a missing one (unusable) from one it could not read.
func TestRead(t *testing.T) {
	ctx := context.Background()
	_, err := Read(ctx, fake.NewClientset())
	assert.True(t, errors.As(err, new(UnusableError)), "a missing ConfigMap is unusable: %v", err)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: Name}, Data: map[string]string{key: kubeadmClusterInfo}}
	info, err := Read(ctx, fake.NewClientset(cm))
	require.NoError(t, err)
	assert.Equal(t, &configv1alpha1.TokenCredentialRequestAPIInfo{Server: "https://10.0.0.1:6443", CertificateAuthorityData: "Q0EgUEVN"}, info)
}

func TestParse(t *testing.T) {
	tests := []struct {
		name       string
		kubeconfig string
		wantServer string
		wantErr    string
	}{
		{name: "kubeadm", kubeconfig: kubeadmClusterInfo, wantServer: "https://10.0.0.1:6443"},
		{
			name: "the current context's cluster",
			kubeconfig: `clusters:
- {name: a, cluster: {server: "https://a", certificate-authority-data: Q0EgUEVN}}
- {name: b, cluster: {server: "https://b", certificate-authority-data: Q0EgUEVN}}
contexts:
- {name: ctx, context: {cluster: b}}
current-context: ctx
`,
			wantServer: "https://b",
		},
		{name: "empty", wantErr: `it has no "kubeconfig" key`},
		{name: "not a kubeconfig", kubeconfig: "clusters: 7", wantErr: `its "kubeconfig" key is not a kubeconfig`},
		{name: "no clusters", kubeconfig: "apiVersion: v1\nkind: Config\n", wantErr: "has 0 clusters"},
		{
			name:       "several clusters and no context",
			kubeconfig: "clusters:\n- {name: b, cluster: {server: https://b}}\n- {name: a, cluster: {server: https://a}}\n",
			wantErr:    `has 2 clusters ["a" "b"] and no current context`,
		},
		{name: "context naming a missing cluster", kubeconfig: "contexts:\n- {name: c, context: {cluster: nope}}\ncurrent-context: c\n", wantErr: `has no cluster "nope"`},
		{name: "no server", kubeconfig: "clusters:\n- {name: a, cluster: {certificate-authority-data: Q0EgUEVN}}\n", wantErr: `cluster "a" has no server`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(tt.kubeconfig)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, &configv1alpha1.TokenCredentialRequestAPIInfo{Server: tt.wantServer, CertificateAuthorityData: "Q0EgUEVN"}, got)
		})
	}
}

func TestReadError(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("get", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("configmaps"), "cluster-info", errors.New("denied"))
	})
	_, err := Read(context.Background(), client)
	require.ErrorContains(t, err, "the ConfigMap kube-public/cluster-info could not be read")
	assert.False(t, errors.As(err, new(UnusableError)), "a read failure must be retried")
}
